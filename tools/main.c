/* rlx: the command-line front end. Dispatches to one subcommand per file (tools/cmd_*.c). */
#include <stdio.h>
#include <string.h>

#include "commands.h"

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"run", rlx_cmd_run, "generate text from a prompt (the default model when no -m; `rlx` alone runs this)"},
    {"chat", rlx_cmd_chat, "interactive chat through the model's chat template"},
    {"inspect", rlx_cmd_inspect, "describe a GGUF file or HF model directory (tensors, config, tokenizer)"},
    {"logits", rlx_cmd_logits, "write the logits of a token sequence as raw float32 (validation)"},
    {"generate", rlx_cmd_generate, "continue a prompt of token ids; prints the generated ids"},
    {"tokenize", rlx_cmd_tokenize, "text to token ids with a model's tokenizer"},
    {"detokenize", rlx_cmd_detokenize, "token ids to text with a model's tokenizer"},
    {"devices", rlx_cmd_devices, "list Vulkan devices with their index and capabilities"},
    {"quantize", rlx_cmd_quantize, "quantize an F32/F16/BF16 GGUF (Q8_0, Q4_0, Q4_K_M, Q5_K_M, Q6_K, ...)"},
    {"synth", rlx_cmd_synth, "write a random-weight GGUF shaped like a real model (qwen3-0.6b, qwen3-8b, ...)"},
    {"serve", rlx_cmd_serve, "an OpenAI-compatible HTTP server (chat, completions, streaming, metrics)"},
    {"bench", rlx_cmd_bench, "measure prefill and decode speed (pp512 / tg128, as llama-bench) and the bandwidth floor"},
    {"validate", rlx_cmd_validate, "check a Vulkan device against the CPU reference (every op, a model, the paths)"},
};

/* rlx --version: what a bug report needs to name the build */
static void version(void) {
#ifdef RLX_HAVE_VULKAN
    const char *vulkan = "on";
#else
    const char *vulkan = "off";
#endif
    printf("rlx %s (commit %s)\nbuild: %s, Vulkan %s\n", RLX_VERSION, RLX_GIT_COMMIT,
           *RLX_BUILD_TYPE ? RLX_BUILD_TYPE : "no build type", vulkan);
}

static void usage(FILE *f) {
    fprintf(f, "usage: rlx <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n'rlx <command> --help' describes a command's options; 'rlx --version' the build.\n");
}

int main(int argc, char **argv) {
    if (argc < 2) return rlx_cmd_run(1, (char *[]){"run", NULL}); /* the embedded default model */
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        version();
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "rlx: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
