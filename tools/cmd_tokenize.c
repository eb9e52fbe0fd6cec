/* rlx tokenize: text -> token ids with a model's tokenizer; rlx detokenize: ids -> text. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_input.h"
#include "cli_util.h"
#include "commands.h"
#include "text/tokenizer/tokenizer_utf8.h"
#include "rlx/tokenizer.h"

#define MODEL_HELP                                                                                 \
    "  -m, --model PATH     a GGUF file, an HF model directory, a tokenizer.json or a\n"              \
    "                       SentencePiece tokenizer.model\n"

static void tokenize_usage(FILE *f) {
    fprintf(f,
            "usage: rlx tokenize -m PATH [--no-bos] [--special] [--ids] (-p TEXT | -f FILE)\n"
            "\n"
            "Tokenizes the text with the model's tokenizer and prints one token per line: its id and\n"
            "the text it stands for, quoted, with control characters escaped. With --ids it prints the\n"
            "ids only, as [1, 2, 3]. The BOS (and EOS) that the vocabulary adds to a text are included\n"
            "unless --no-bos. Invalid UTF-8 in the text is replaced by U+FFFD, one per bad byte, and\n"
            "counted in a warning on stderr.\n"
            "\n"
            "options:\n" MODEL_HELP
            "  -p, --prompt TEXT    the text\n"
            "  -f, --file FILE      read the text from FILE ('-': standard input), at most\n"
            "                       " RLX_CLI_MAX_TEXT_HELP " (more is an error)\n"
            "  --no-bos             add nothing around the text\n"
            "  --special            recognise control tokens written in the text (<|im_start|>, <s>);\n"
            "                       without it their text is tokenized like any other\n"
            "  --ids                print only the list of ids\n"
            "  -h, --help           this text\n"
            "\n"
            "exit status: 0 on success, 1 when the tokenizer or the file cannot be read, 2 on bad\n"
            "arguments.\n");
}

static void detokenize_usage(FILE *f) {
    fprintf(f,
            "usage: rlx detokenize -m PATH [--special] IDS\n"
            "\n"
            "Prints the text of the comma-separated token ids (e.g. 1,403,407) exactly as the tokenizer\n"
            "decodes them, with no newline added. A leading BOS and the space a SentencePiece vocabulary\n"
            "puts before the first word are not printed.\n"
            "\n"
            "options:\n" MODEL_HELP
            "  --special            print control tokens (<s>, <|im_end|>) as their text\n"
            "  -h, --help           this text\n"
            "\n"
            "exit status: 0 on success, 1 when the tokenizer cannot be read, 2 on bad arguments (an id\n"
            "outside the vocabulary too).\n");
}

typedef struct {
    const char *model, *prompt, *file, *ids; /* borrowed from argv */
    bool no_bos, special, print_ids, help;
    bool detok; /* rlx detokenize: one positional argument, IDS */
} tok_args;

enum { OPT_NO_BOS = RLX_OPT_COMMAND, OPT_SPECIAL, OPT_IDS };

static const struct option tokenize_options[] = {
    {"model", required_argument, NULL, 'm'},
    {"prompt", required_argument, NULL, 'p'},
    {"file", required_argument, NULL, 'f'},
    {"no-bos", no_argument, NULL, OPT_NO_BOS},
    {"special", no_argument, NULL, OPT_SPECIAL},
    {"ids", no_argument, NULL, OPT_IDS},
    {"help", no_argument, NULL, 'h'},
    {0},
};

static const struct option detokenize_options[] = {
    {"model", required_argument, NULL, 'm'},
    {"special", no_argument, NULL, OPT_SPECIAL},
    {"help", no_argument, NULL, 'h'},
    {0},
};

/* Either command's options: each table holds only its own. */
static rlx_status apply(const rlx_cli_parser *p, int opt, void *args) {
    tok_args *a = args;
    switch (opt) {
    case 'm':
        a->model = p->value;
        return NULL;
    case 'p':
        a->prompt = p->value;
        return NULL;
    case 'f':
        a->file = p->value;
        return NULL;
    case OPT_NO_BOS:
        a->no_bos = true;
        return NULL;
    case OPT_SPECIAL:
        a->special = true;
        return NULL;
    case OPT_IDS:
        a->print_ids = true;
        return NULL;
    case 'h':
        a->help = true;
        return NULL;
    }
    /* a positional argument: detokenize's IDS, once; "-" is no IDS */
    if (a->detok && p->value[0] != '-' && !a->ids) {
        a->ids = p->value;
        return NULL;
    }
    return rlx_cli_unknown(p);
}

static rlx_status parse(int argc, char **argv, bool detok, tok_args *a) {
    rlx_cli_parser p = {.argc = argc,
                        .argv = argv,
                        .shorts = detok ? "m:h" : "m:p:f:h",
                        .longs = detok ? detokenize_options : tokenize_options,
                        .or_argument = true};
    a->detok = detok;
    RLX_TRY(rlx_cli_parse(&p, apply, a));
    if (a->help) return NULL;
    if (!a->model) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "missing -m PATH (the model or tokenizer)");
    if (detok && !a->ids) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "missing the token ids, e.g. 1,403,407");
    if (!detok && !a->prompt == !a->file)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "give the text with exactly one of -p TEXT or -f FILE");
    return NULL;
}

static size_t count_invalid_bytes(const char *s, size_t n) {
    size_t bad = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t k = rlx_utf8_next(s + i, n - i, &cp);
        if (!k) bad++;
        i += k ? k : 1;
    }
    return bad;
}

/* The bytes of one token, quoted, with control characters and bytes that are not UTF-8 escaped. */
static void print_piece(const char *p, size_t n) {
    putchar('\'');
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t k = rlx_utf8_next(p + i, n - i, &cp);
        unsigned char c = (unsigned char)p[i];
        if (k == 1 && c == '\n') fputs("\\n", stdout);
        else if (k == 1 && c == '\t') fputs("\\t", stdout);
        else if (k == 1 && c == '\r') fputs("\\r", stdout);
        else if (k == 1 && c == '\\') fputs("\\\\", stdout);
        else if (k == 1 && c == '\'') fputs("\\'", stdout);
        else if (k == 0 || c < 0x20 || c == 0x7F) printf("\\x%02x", c);
        else fwrite(p + i, 1, k, stdout);
        i += k ? k : 1;
    }
    putchar('\'');
}

static rlx_status print_tokens(const rlx_tokenizer *t, const int32_t *ids, size_t n, bool only_ids) {
    if (only_ids) {
        putchar('[');
        for (size_t i = 0; i < n; i++) printf(i ? ", %d" : "%d", ids[i]);
        puts("]");
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        char *text;
        size_t len;
        RLX_TRY(rlx_tokenizer_decode(t, &ids[i], 1, RLX_DECODE_SPECIAL | RLX_DECODE_CONTINUE, &text, &len));
        printf("%6d -> ", ids[i]);
        print_piece(text, len);
        putchar('\n');
        free(text);
    }
    return NULL;
}

static rlx_status tokenize(const tok_args *a) {
    char *text = NULL;
    size_t len = 0;
    if (a->file) RLX_TRY(rlx_cli_read_text(a->file, RLX_CLI_MAX_TEXT_BYTES, &text, &len));
    const char *src = a->file ? text : a->prompt;
    if (!a->file) len = strlen(a->prompt);
    size_t bad = count_invalid_bytes(src, len);
    if (bad) fprintf(stderr, "rlx tokenize: warning: %zu byte(s) of invalid UTF-8 replaced by U+FFFD\n", bad);
    rlx_tokenizer *t = NULL;
    int32_t *ids = NULL;
    size_t n = 0;
    unsigned flags = (a->no_bos ? 0 : RLX_ENCODE_ADD_SPECIAL) | (a->special ? RLX_ENCODE_PARSE_SPECIAL : 0);
    rlx_status s = rlx_tokenizer_open(a->model, &t);
    if (!s) s = rlx_tokenizer_encode(t, src, len, flags, &ids, &n);
    if (!s) s = print_tokens(t, ids, n, a->print_ids);
    free(ids);
    free(text);
    rlx_tokenizer_close(t);
    return s;
}

/* An id outside the vocabulary is a bad argument (exit 2), as --tokens in the model commands. */
static rlx_status check_ids(const tok_args *a, const rlx_tokenizer *t, const int32_t *ids, int32_t n, bool *bad) {
    int32_t vocab = rlx_tokenizer_vocab_size(t);
    for (int32_t i = 0; i < n; i++) {
        if (ids[i] < vocab) continue;
        *bad = true;
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "IDS: item %d, id %d, is outside the vocabulary [0, %d) of '%s'",
                          i + 1, ids[i], vocab, a->model);
    }
    return NULL;
}

static rlx_status detokenize(const tok_args *a, const int32_t *ids, int32_t n, bool *bad_ids) {
    rlx_tokenizer *t = NULL;
    char *text = NULL;
    size_t len = 0;
    rlx_status s = rlx_tokenizer_open(a->model, &t);
    if (!s) s = check_ids(a, t, ids, n, bad_ids);
    if (!s) s = rlx_tokenizer_decode(t, ids, (size_t)n, a->special ? RLX_DECODE_SPECIAL : 0, &text, &len);
    if (!s) fwrite(text, 1, len, stdout);
    free(text);
    rlx_tokenizer_close(t);
    return s;
}

int rlx_cmd_tokenize(int argc, char **argv) {
    tok_args a = {0};
    rlx_status s = parse(argc, argv, false, &a);
    if (s) return rlx_cli_fail("tokenize", s, true);
    if (a.help) {
        tokenize_usage(stdout);
        return RLX_EXIT_OK;
    }
    s = tokenize(&a);
    return s ? rlx_cli_fail("tokenize", s, false) : RLX_EXIT_OK;
}

int rlx_cmd_detokenize(int argc, char **argv) {
    tok_args a = {0};
    rlx_status s = parse(argc, argv, true, &a);
    if (s) return rlx_cli_fail("detokenize", s, true);
    if (a.help) {
        detokenize_usage(stdout);
        return RLX_EXIT_OK;
    }
    int32_t *ids = NULL, n = 0;
    s = rlx_cli_parse_ids("IDS", a.ids, &ids, &n);
    if (s) return rlx_cli_fail("detokenize", s, true);
    bool bad_ids = false;
    s = detokenize(&a, ids, n, &bad_ids);
    free(ids);
    return s ? rlx_cli_fail("detokenize", s, bad_ids) : RLX_EXIT_OK;
}
