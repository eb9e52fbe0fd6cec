/* Fuzz target for a sharded safetensors checkpoint's index (`model.safetensors.index.json`): the
 * input is the index; it is written into a private directory beside two small valid shards
 * (a.safetensors: x, y; b.safetensors: x, z) and the directory is opened as a checkpoint. An index
 * gives a tensor set or an error, never a crash, and never a file outside the directory.
 * Seeds: tests/corpus/safetensors_index/. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_util.h"
#include "loader/format/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];
static char index_path[128];
static volatile uint8_t sink;

static void remove_dir(void) {
    static const char *const names[] = {"a.safetensors", "b.safetensors", "model.safetensors.index.json"};
    char p[160];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        unlink(p);
    }
    rmdir(dir);
}

/* A safetensors file: the header JSON padded with spaces to a multiple of 8, then `data_len` bytes. */
static int write_shard(const char *name, const char *header, size_t data_len) {
    char p[160];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    if (!f) return -1;
    size_t n = strlen(header), padded = (n + 7) / 8 * 8;
    uint8_t len[8];
    for (int i = 0; i < 8; i++) len[i] = (uint8_t)((uint64_t)padded >> (8 * i));
    fwrite(len, 1, 8, f);
    fwrite(header, 1, n, f);
    for (size_t i = n; i < padded; i++) fputc(' ', f);
    for (size_t i = 0; i < data_len; i++) fputc((int)(i * 37 + 11) & 0xff, f);
    return fclose(f);
}

static int setup(void) {
    snprintf(dir, sizeof dir, "/tmp/rlx-fuzz-index-XXXXXX");
    if (!mkdtemp(dir)) return -1;
    atexit(remove_dir);
    snprintf(index_path, sizeof index_path, "%s/model.safetensors.index.json", dir);
    if (write_shard("a.safetensors",
                    "{\"__metadata__\":{\"format\":\"pt\"},\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                    "\"y\":{\"dtype\":\"F16\",\"shape\":[2,2],\"data_offsets\":[8,16]}}",
                    16))
        return -1;
    return write_shard("b.safetensors",
                       "{\"z\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[0,8]},"
                       "\"x\":{\"dtype\":\"F32\",\"shape\":[1,2],\"data_offsets\":[8,16]}}",
                       16);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int ready = 1; /* 1: not set up yet, 0: ready, -1: setup failed */
    if (ready == 1) ready = setup();
    if (ready != 0) abort(); /* the harness cannot work: not a finding, but never silent */
    FILE *f = fopen(index_path, "wb");
    if (!f) abort();
    if (size) fwrite(data, 1, size, f);
    fclose(f);
    rlx_safetensors *st = NULL;
    rlx_status s = rlx_safetensors_open(dir, &st);
    if (s) {
        rlx_status_free(s);
        return 0;
    }
    fuzz_touch_safetensors(st, &sink);
    for (size_t i = 0; i < st->n_tensors; i++)
        if (!rlx_safetensors_shard_name(st, st->tensors[i].shard)) abort();
    rlx_safetensors_close(st);
    return 0;
}
