/* The server's text path (server/text_out.c): UTF-8 made valid and cut only at character
 * boundaries, and stop strings matched across token boundaries.
 * Truth: glibc's own UTF-8 decoder (mbrtowc in C.UTF-8) says what is a character, and strstr says
 * where a stop string first occurs; the property under test is that any split of the same bytes
 * gives the same text as one piece (streamed deltas add up to the non-streamed content). */
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "server/text_out.h"
#include "test_util.h"

/* Well-formed per glibc (C.UTF-8): mbrtowc accepts every character and stops nowhere. */
static bool glibc_valid(const char *s, size_t n) {
    mbstate_t st;
    memset(&st, 0, sizeof st);
    for (size_t i = 0; i < n;) {
        wchar_t w;
        size_t k = mbrtowc(&w, s + i, n - i, &st);
        if (k == (size_t)-1 || k == (size_t)-2) return false;
        i += k ? k : 1; /* a NUL is one byte */
    }
    return true;
}

/* The text of bytes pushed in pieces cut at the given points (sorted), then finished. */
static char *utf8_pieces(const char *b, size_t n, const size_t *cuts, int n_cuts, size_t *out_len, bool *pieces_ok) {
    rlx_srv_utf8 u = {0};
    rlx_srv_buf all = {0};
    size_t at = 0;
    *pieces_ok = true;
    for (int c = 0; c <= n_cuts; c++) {
        size_t end = c < n_cuts ? cuts[c] : n;
        rlx_srv_buf piece = {0};
        T_OK(rlx_srv_utf8_push(&u, b + at, end - at, &piece));
        if (c == n_cuts) T_OK(rlx_srv_utf8_finish(&u, &piece));
        /* every piece alone is whole characters */
        if (piece.len && !glibc_valid(piece.data, piece.len)) *pieces_ok = false;
        T_OK(rlx_srv_buf_append(&all, piece.data ? piece.data : "", piece.len));
        rlx_srv_buf_free(&piece);
        at = end;
    }
    T_OK(rlx_srv_buf_append(&all, "", 0));
    *out_len = all.len;
    return all.data;
}

/* Hand-checked vectors (RFC 3629 section 4; one U+FFFD per maximal ill-formed subpart, Unicode
 * 15 chapter 3.9, table 3-8's practice, as text_out.h says). */
static void test_utf8_vectors(void) {
    static const struct {
        const char *in, *want;
    } v[] = {
        {"plain ascii", "plain ascii"},
        {"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80", "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"},
        {"a\x80z", "a\xEF\xBF\xBDz"},                             /* a stray continuation byte */
        {"\xC0\xAF", "\xEF\xBF\xBD\xEF\xBF\xBD"},                 /* overlong '/': C0 never leads */
        {"\xED\xA0\x80", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"}, /* a surrogate: ED A0 breaks, A0 80 stray */
        {"\xF4\x90\x80\x80", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"}, /* past U+10FFFF */
        {"\xE2\x82", "\xEF\xBF\xBD"},   /* truncated at the end: one subpart */
        {"\xE2\x82z", "\xEF\xBF\xBDz"}, /* truncated before ASCII */
        /* Unicode 15, table 3-11: 61 F1 80 80 E1 80 C2 62 80 63 80 BF 64 -> a FFFD FFFD FFFD b FFFD c FFFD FFFD d */
        {"\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64", "a\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"
                                                                 "b\xEF\xBF\xBD"
                                                                 "c\xEF\xBF\xBD\xEF\xBF\xBD"
                                                                 "d"},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        size_t len;
        bool ok;
        char *got = utf8_pieces(v[i].in, strlen(v[i].in), NULL, 0, &len, &ok);
        T_CHECK(len == strlen(v[i].want) && !memcmp(got, v[i].want, len),
                "utf8 vector %zu: got %zu bytes, expected %zu", i, len, strlen(v[i].want));
        free(got);
    }
    printf("utf8: %zu hand-checked vectors\n", sizeof v / sizeof v[0]);
}

/* Random bytes (biased to UTF-8 lead and continuation bytes) cut at random points give, piece by
 * piece, the same text as one push, and every piece is whole characters per glibc. */
static void test_utf8_splits(void) {
    srand(1234);
    int worst = 0;
    for (int trial = 0; trial < 3000; trial++) {
        char b[64];
        size_t n = (size_t)(rand() % 64);
        for (size_t i = 0; i < n; i++) {
            int r = rand() % 6;
            b[i] = (char)(r == 0   ? 0xC3
                          : r == 1 ? 0xE2
                          : r == 2 ? 0xF0
                          : r == 3 ? 0x80 + rand() % 64
                          : r == 4 ? 'a'
                                   : rand());
        }
        size_t cuts[8];
        int n_cuts = n ? rand() % 8 : 0;
        for (int c = 0; c < n_cuts; c++) cuts[c] = (size_t)rand() % (n + 1);
        for (int c = 1; c < n_cuts; c++) /* insertion sort */
            for (int d = c; d > 0 && cuts[d - 1] > cuts[d]; d--) {
                size_t t = cuts[d];
                cuts[d] = cuts[d - 1];
                cuts[d - 1] = t;
            }
        size_t whole_len, split_len;
        bool ok1, ok2;
        char *whole = utf8_pieces(b, n, NULL, 0, &whole_len, &ok1);
        char *split = utf8_pieces(b, n, cuts, n_cuts, &split_len, &ok2);
        T_CHECK(whole_len == split_len && !memcmp(whole, split, whole_len), "utf8 trial %d: split text differs", trial);
        T_CHECK(ok1 && ok2, "utf8 trial %d: a piece is not whole characters", trial);
        T_CHECK(glibc_valid(whole, whole_len), "utf8 trial %d: the text is not valid UTF-8", trial);
        T_CHECK(rlx_srv_utf8_valid(whole, whole_len), "utf8 trial %d: rlx_srv_utf8_valid disagrees with glibc", trial);
        /* valid input comes back unchanged */
        if (glibc_valid(b, n) && memchr(b, 0, n) == NULL)
            T_CHECK(whole_len == n && !memcmp(whole, b, n), "utf8 trial %d: valid input changed", trial);
        if (n_cuts > worst) worst = n_cuts;
        free(whole);
        free(split);
    }
    printf("utf8: 3000 random texts, up to %d cuts each: every split equals the whole\n", worst);
}

/* The text a stop matcher emits for `text` cut into pieces at every `step` bytes. */
static char *stop_run(const char *text, char *const *stops, int n_stops, size_t step, bool *matched) {
    rlx_srv_stop s = {.stops = stops, .n_stops = n_stops};
    rlx_srv_buf out = {0};
    size_t n = strlen(text);
    for (size_t at = 0; at < n; at += step)
        T_OK(rlx_srv_stop_push(&s, text + at, at + step <= n ? step : n - at, &out));
    T_OK(rlx_srv_stop_finish(&s, &out));
    T_OK(rlx_srv_buf_append(&out, "", 0));
    *matched = s.matched;
    rlx_srv_stop_free(&s);
    return out.data;
}

/* Oracle: the text before the earliest occurrence of any stop string (strstr). */
static size_t oracle_cut(const char *text, char *const *stops, int n_stops) {
    size_t cut = strlen(text);
    for (int k = 0; k < n_stops; k++) {
        const char *p = strstr(text, stops[k]);
        if (p && (size_t)(p - text) < cut) cut = (size_t)(p - text);
    }
    return cut;
}

static void test_stop(void) {
    static const struct {
        const char *text;
        const char *stops[3];
    } v[] = {
        {"Hello world! STOP here", {"STOP"}},
        {"aaab", {"aab"}},                   /* a false start overlapping the match */
        {"one two three", {"three", "two"}}, /* the earliest wins, not the first listed */
        {"no stop in sight", {"xyz", "sight!"}},
        {"ends with a partial ST", {"STOP"}},
        {"<|im_end|> tail", {"<|im_end|>"}},
        {"x\n\nUser: hi", {"\n\nUser:", "\n"}},
        {"^a^c###", {"##", "c###"}}, /* a later-starting match waits for an earlier partial one */
        {"^a^c##", {"##", "c###"}},  /* ... which never completes: the later one, at the end */
        {"abcd", {"bcd", "c"}},
    };
    int n = 0;
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        int n_stops = 0;
        while (n_stops < 3 && v[i].stops[n_stops]) n_stops++;
        size_t want = oracle_cut(v[i].text, (char *const *)v[i].stops, n_stops);
        for (size_t step = 1; step <= strlen(v[i].text); step++) {
            bool matched;
            char *got = stop_run(v[i].text, (char *const *)v[i].stops, n_stops, step, &matched);
            T_CHECK(strlen(got) == want && !strncmp(got, v[i].text, want),
                    "stop case %zu, pieces of %zu bytes: '%s', expected the first %zu bytes", i, step, got, want);
            T_CHECK(matched == (want < strlen(v[i].text)), "stop case %zu: matched %d", i, (int)matched);
            free(got);
            n++;
        }
    }
    printf("stop strings: %zu texts, %d splittings: each equals the text before the first stop (strstr)\n",
           sizeof v / sizeof v[0], n);
}

int main(void) {
    if (!setlocale(LC_CTYPE, "C.UTF-8")) {
        printf("FAIL: no C.UTF-8 locale for the reference decoder\n");
        return 1;
    }
    test_utf8_vectors();
    test_utf8_splits();
    test_stop();
    return t_summary("test_server_text");
}
