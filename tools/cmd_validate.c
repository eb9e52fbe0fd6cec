/* rlx validate: the backend validation harness (validate/validate.h, docs/VALIDATION.md) on one
 * Vulkan device. This file parses the options and writes the report; the checks live in the
 * library. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli_util.h"
#include "commands.h"
#include "rlx/status.h"
#ifdef RLX_HAVE_VULKAN
#include "ir/graph.h"
#include "validate/validate.h"
#endif

static void usage(FILE *f) {
    fprintf(f,
            "usage: rlx validate [--device NAME] [--ops PATTERN] [--types LIST] [-m MODEL] [-o md|json]\n"
            "\n"
            "Validates a Vulkan device against the CPU reference backend: its capabilities against what the\n"
            "kernels need, every op of ir/ops.def on several shapes, every weight type and both prefill\n"
            "precision modes (NMSE and max |diff| per case against its bound), and with -m a model's logits,\n"
            "greedy continuation and decode paths. docs/VALIDATION.md describes the checks and the JSON.\n"
            "\n"
            "options:\n"
            "  --device NAME        device index or name substring (default: $RLX_VK_DEVICE, else the first\n"
            "                       GPU; CPU devices such as llvmpipe only when named)\n"
            "  --ops PATTERN        comma-separated op names or globs (MATMUL,MOE_*); default: every op\n"
            "  --types LIST         weight types of the ops that take any (F16,Q4_K,...); default: all\n"
            "  --quick              one shape per op and type\n"
            "  --no-ops             skip the op sweep (capabilities, and the model with -m)\n"
            "  --no-paths           skip the paths (pipeline cache; with -m bucketed/exact/naive, chains)\n"
            "  -m, --model PATH     also run the model section on PATH (GGUF or HF directory)\n"
            "  -o, --output md|json the report's format on stdout (default md)\n"
            "  --vk-validation      run under the Khronos validation layer; any message fails\n"
            "  -h, --help           this text\n"
            "\n"
            "exit status: 0 when every case is within its bound, 1 when any is not (the report names each)\n"
            "or the device cannot be used, 2 on bad arguments.\n");
}

enum {
    OPT_DEVICE = RLX_OPT_COMMAND,
    OPT_OPS,
    OPT_TYPES,
    OPT_QUICK,
    OPT_NO_OPS,
    OPT_NO_PATHS,
    OPT_VALIDATION,
    OPT_PERTURB_OP,
    OPT_PERTURB_WEIGHT
};

static const struct option options[] = {
    {"device", required_argument, NULL, OPT_DEVICE},
    {"ops", required_argument, NULL, OPT_OPS},
    {"types", required_argument, NULL, OPT_TYPES},
    {"quick", no_argument, NULL, OPT_QUICK},
    {"no-ops", no_argument, NULL, OPT_NO_OPS},
    {"no-paths", no_argument, NULL, OPT_NO_PATHS},
    {"model", required_argument, NULL, 'm'},
    {"output", required_argument, NULL, 'o'},
    {"vk-validation", no_argument, NULL, OPT_VALIDATION},
    /* test-only, refused unless RLX_VALIDATE_TEST=1 (docs/VALIDATION.md, "Testing the harness") */
    {"test-perturb-op", required_argument, NULL, OPT_PERTURB_OP},
    {"test-perturb-weight", required_argument, NULL, OPT_PERTURB_WEIGHT},
    {"help", no_argument, NULL, 'h'},
    {0},
};

#ifdef RLX_HAVE_VULKAN
typedef struct {
    rlx_validate_opts v;
    const char *types;      /* borrowed from argv */
    const char *perturb_op; /* borrowed */
    bool json, help;
} validate_args;

/* The test switches exist to prove the harness can fail; a user's run never takes them. */
static rlx_status test_only(const rlx_cli_parser *p) {
    const char *t = getenv("RLX_VALIDATE_TEST");
    if (t && strcmp(t, "1") == 0) return NULL;
    return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%s is a test-only switch (it makes the report wrong on purpose); "
                      "refused unless RLX_VALIDATE_TEST=1", p->name);
}

static rlx_status apply(const rlx_cli_parser *p, int opt, void *args) {
    validate_args *a = args;
    switch (opt) {
    case OPT_DEVICE:
        a->v.vk.device = p->value;
        a->v.vk.device_from_env = false;
        return NULL;
    case OPT_OPS: a->v.ops = p->value; return rlx_validate_ops_check(p->value);
    case OPT_TYPES: a->types = p->value; return NULL;
    case OPT_QUICK: a->v.quick = true; return NULL;
    case OPT_NO_OPS: a->v.no_ops = true; return NULL;
    case OPT_NO_PATHS: a->v.no_paths = true; return NULL;
    case 'm': a->v.model = p->value; return NULL;
    case 'o':
        if (strcmp(p->value, "md") && strcmp(p->value, "json"))
            return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%s takes md or json, not '%s'", p->name, p->value);
        a->json = strcmp(p->value, "json") == 0;
        return NULL;
    case OPT_VALIDATION: a->v.vk.validation = true; return NULL;
    case OPT_PERTURB_OP:
        RLX_TRY(test_only(p));
        a->perturb_op = p->value;
        return NULL;
    case OPT_PERTURB_WEIGHT:
        RLX_TRY(test_only(p));
        a->v.perturb_weight = p->value;
        return NULL;
    case 'h': a->help = true; return NULL;
    }
    return rlx_cli_unknown(p);
}

static rlx_status parse(int argc, char **argv, validate_args *a) {
    rlx_cli_parser p = {.argc = argc, .argv = argv, .shorts = "m:o:h", .longs = options, .long_names = "mo"};
    RLX_TRY(rlx_cli_parse(&p, apply, a));
    if (a->help) return NULL;
    if (a->types) RLX_TRY(rlx_validate_parse_types(a->types, &a->v));
    for (int op = 0; a->perturb_op && op < RLX_OP_COUNT; op++)
        if (strcasecmp(a->perturb_op, rlx_op_name((rlx_op)op)) == 0) a->v.perturb_op = op;
    if (a->perturb_op && a->v.perturb_op < 0)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "--test-perturb-op: '%s' is no op of ir/ops.def", a->perturb_op);
    return NULL;
}

int rlx_cmd_validate(int argc, char **argv) {
    validate_args a = {.v = rlx_validate_opts_default()};
    rlx_status s = rlx_vk_options_from_env(&a.v.vk); /* RLX_VK_* as every command takes them; flags override */
    if (!s) s = parse(argc, argv, &a);
    if (s) return rlx_cli_fail("validate", s, true);
    if (a.help) {
        usage(stdout);
        return RLX_EXIT_OK;
    }
    rlx_validate_report *r = NULL;
    s = rlx_validate_run(&a.v, &r);
    if (s) return rlx_cli_fail("validate", s, false);
    s = a.json ? rlx_validate_write_json(r, stdout) : rlx_validate_write_md(r, stdout);
    bool passed = rlx_validate_passed(r);
    if (!passed) fprintf(stderr, "rlx validate: FAIL: %d failure(s); the report names each\n", r->failed);
    rlx_validate_report_free(r);
    if (s) return rlx_cli_fail("validate", s, false);
    return passed ? RLX_EXIT_OK : RLX_EXIT_RUNTIME;
}
#else
int rlx_cmd_validate(int argc, char **argv) {
    if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        usage(stdout);
        return 0;
    }
    (void)options;
    fprintf(stderr, "rlx validate: this rlx was built without Vulkan (RLX_VULKAN=OFF)\n");
    return 1;
}
#endif
