/* rlx inspect PATH [--json]: what a GGUF file or an HF model directory holds. */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli_util.h"
#include "commands.h"
#include "inspect_report.h"
#include "loader/format/gguf.h"
#include "loader/format/model.h"
#include "loader/format/safetensors.h"

static const char *inspect_help =
    "usage: rlx inspect PATH [--json]\n"
    "\n"
    "Describes a model without running it. PATH is a .gguf file (any GGUF v2/v3, including\n"
    "vocabulary-only files) or a Hugging Face model directory (config.json + *.safetensors).\n"
    "Prints the architecture, parameter count, context length, the family config rlx derives\n"
    "with its layer pattern (L linear attention, S sliding window, A full attention), the\n"
    "tokenizer kind and vocabulary size, whether a chat template is present, and every\n"
    "tensor with its type, shape (in the file's own order: GGUF ne[0] first, safetensors\n"
    "outermost first) and byte size.\n"
    "\n"
    "  --json   print the same as one JSON object\n"
    "\n"
    "Exit status: 0 on success; 1 when the file is malformed or its tensors do not match its\n"
    "metadata; 2 on bad arguments. An architecture rlx cannot run is reported, not an error.\n";

/* Adds the family config rlx derives, or why there is none. Returns false when the model is
 * malformed (as opposed to merely of an unsupported architecture). */
static bool add_model_config(json_t *report, const char *path) {
    if (json_array_size(json_object_get(report, "tensors")) == 0) {
        json_object_set_new(report, "family_note", json_string("none: a vocabulary-only file (no tensors)"));
        return true;
    }
    rlx_model *m = NULL;
    rlx_status s = rlx_model_open(path, &m);
    if (s) {
        bool unsupported = rlx_status_code(s) == RLX_ERR_UNSUPPORTED;
        const char *msg = rlx_status_message(s);
        json_object_set_new(report, unsupported ? "family_note" : "model_error", rlx_inspect_text_json(msg, strlen(msg)));
        rlx_status_free(s);
        return unsupported;
    }
    json_object_set_new(report, "family", json_string(rlx_family_name(m->config.family)));
    json_object_set_new(report, "config", rlx_inspect_config_json(&m->config));
    if (m->source == RLX_MODEL_HF_DIR) json_object_set_new(report, "rlx_tensors", rlx_inspect_weights_json(m));
    rlx_model_close(m);
    return true;
}

enum { OPT_JSON = RLX_OPT_COMMAND };

static const struct option options[] = {
    {"json", no_argument, NULL, OPT_JSON},
    {"help", no_argument, NULL, 'h'},
    {0},
};

/* Reads the arguments in order: the exit code when the command ends here (--help, a usage error),
 * else -1. */
static int parse(int argc, char **argv, const char **path, bool *as_json) {
    rlx_cli_parser p = {.argc = argc, .argv = argv, .shorts = "h", .longs = options};
    for (;;) {
        int opt;
        rlx_status s = rlx_cli_next(&p, &opt);
        if (!s && opt == RLX_CLI_ARG && p.value[0] == '-') s = rlx_cli_unknown(&p); /* "-" is no PATH */
        if (s) {
            fprintf(stderr, "rlx inspect: %s\n\n%s", rlx_status_message(s), inspect_help);
            rlx_status_free(s);
            return 2;
        }
        if (opt == RLX_CLI_END) break;
        if (opt == 'h') {
            fputs(inspect_help, stdout);
            return 0;
        } else if (opt == OPT_JSON) {
            *as_json = true;
        } else if (*path) {
            fprintf(stderr, "rlx inspect: more than one PATH ('%s' and '%s')\n", *path, p.value);
            return 2;
        } else {
            *path = p.value;
        }
    }
    if (!*path) {
        fprintf(stderr, "rlx inspect: missing PATH\n\n%s", inspect_help);
        return 2;
    }
    return -1;
}

int rlx_cmd_inspect(int argc, char **argv) {
    const char *path = NULL;
    bool as_json = false;
    int code = parse(argc, argv, &path, &as_json);
    if (code >= 0) return code;

    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "rlx inspect: %s: %s\n", path, strerror(errno));
        return 1;
    }
    json_t *report = NULL;
    rlx_status s = S_ISDIR(st.st_mode) ? rlx_inspect_hf_dir(path, &report) : rlx_inspect_gguf(path, &report);
    if (s) {
        fprintf(stderr, "rlx inspect: %s\n", rlx_status_message(s));
        rlx_status_free(s);
        return 1;
    }
    bool ok = add_model_config(report, path);
    if (as_json) {
        json_dumpf(report, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        fputc('\n', stdout);
    } else {
        rlx_inspect_print_text(report, stdout);
    }
    if (!ok) fprintf(stderr, "rlx inspect: %s\n", json_string_value(json_object_get(report, "model_error")));
    json_decref(report);
    return ok ? 0 : 1;
}
