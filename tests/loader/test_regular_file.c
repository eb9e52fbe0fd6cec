/* Model files that are not regular files are refused at once instead of blocking: opening a FIFO
 * for reading waits for a writer that never comes, and /dev/zero never ends. Every loader path
 * that opens a model, a shard, an index or a config.json is tried on a FIFO made here with mkfifo
 * (no writer ever opens it); an alarm turns a regression into a failure instead of a hang. The
 * property: an RLX_ERR_IO error that names the path and says what it is. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "loader/core/mapped_file.h"
#include "loader/core/regular_file.h"
#include "loader/format/gguf.h"
#include "loader/format/model.h"
#include "loader/format/model_config.h"
#include "loader/format/safetensors.h"
#include "test_util.h"

static const char *const llama_config =
    "{\"model_type\": \"llama\", \"num_hidden_layers\": 1, \"hidden_size\": 16, \"intermediate_size\": 32,"
    " \"vocab_size\": 4, \"num_attention_heads\": 2, \"max_position_embeddings\": 64, \"rms_norm_eps\": 1e-5}";

static void on_alarm(int sig) {
    (void)sig;
    static const char msg[] = "test_regular_file: an open blocked for 10 s (a FIFO was read)\n";
    ssize_t n = write(2, msg, sizeof msg - 1);
    (void)n;
    _exit(1);
}

static void make_fifo(const char *path) {
    if (mkfifo(path, 0600) != 0) {
        fprintf(stderr, "mkfifo %s failed\n", path);
        exit(1);
    }
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (!f || fputs(text, f) < 0) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
    fclose(f);
}

static void expect_fifo_error(const char *what, rlx_status s) {
    if (s) printf("  %s: %s\n", what, rlx_status_message(s));
    T_CHECK(s != NULL, "%s: opened a FIFO", what);
    T_ERR(s, RLX_ERR_IO, "is a FIFO, expected a regular file");
}

static void fifo_file_cases(void) {
    const char *fifo = t_tmp_path("model.gguf");
    make_fifo(fifo);
    int fd = -1;
    char *data = NULL;
    size_t len = 0;
    rlx_mapped_file *mf = NULL;
    rlx_gguf *g = NULL;
    rlx_model *m = NULL;
    rlx_safetensors *st = NULL;
    rlx_model_config c;
    expect_fifo_error("rlx_file_open_regular", rlx_file_open_regular(fifo, &fd, NULL));
    expect_fifo_error("rlx_file_check_regular", rlx_file_check_regular(fifo));
    expect_fifo_error("rlx_file_read_regular", rlx_file_read_regular(fifo, 1 << 20, &data, &len));
    expect_fifo_error("rlx_mapped_file_open", rlx_mapped_file_open(fifo, &mf));
    expect_fifo_error("rlx_gguf_open", rlx_gguf_open(fifo, &g));
    expect_fifo_error("rlx_model_open", rlx_model_open(fifo, &m));
    expect_fifo_error("rlx_safetensors_open", rlx_safetensors_open(fifo, &st));
    expect_fifo_error("rlx_model_config_from_hf_file", rlx_model_config_from_hf_file(fifo, &c));
    T_CHECK(fd == -1 && !data && !mf && !g && !m && !st, "no output is set on failure");
    unlink(fifo);
}

/* An HF directory holding one FIFO where a file is expected: config.json, the index, or a shard. */
static void hf_dir_case(const char *what, const char *fifo_name, const char *index_json) {
    char dir[4096], cfg[4200], other[4200];
    snprintf(dir, sizeof dir, "%s", t_tmp_path("hf"));
    T_CHECK(mkdir(dir, 0700) == 0, "made %s", dir);
    snprintf(cfg, sizeof cfg, "%s/config.json", dir);
    if (strcmp(fifo_name, "config.json")) write_text(cfg, llama_config);
    snprintf(other, sizeof other, "%s/model.safetensors.index.json", dir);
    if (index_json) write_text(other, index_json);
    char fifo[4200];
    snprintf(fifo, sizeof fifo, "%s/%s", dir, fifo_name);
    make_fifo(fifo);
    rlx_model *m = NULL;
    rlx_status s = rlx_model_open(dir, &m);
    expect_fifo_error(what, s);
    T_CHECK(!m, "%s: no model", what);
    unlink(fifo);
    unlink(cfg);
    unlink(other);
    rmdir(dir);
}

static void device_and_regular_cases(void) {
    char *data = NULL;
    size_t len = 0;
    T_ERR(rlx_file_read_regular("/dev/zero", 1 << 20, &data, &len), RLX_ERR_IO, "is a character device");
    T_ERR(rlx_file_check_regular(t_tmp_path("absent")), RLX_ERR_NOT_FOUND, "no such file");
    const char *path = t_tmp_path("config.json");
    write_text(path, llama_config);
    if (T_OK(rlx_file_read_regular(path, 4096, &data, &len))) {
        T_CHECK(len == strlen(llama_config) && !memcmp(data, llama_config, len) && data[len] == '\0',
                "read back %zu bytes of %zu, NUL-terminated", len, strlen(llama_config));
        free(data);
    }
    data = NULL;
    T_ERR(rlx_file_read_regular(path, 16, &data, &len), RLX_ERR_BAD_FILE, "more than the 16 this file may have");
    T_CHECK(!data, "no buffer on a refusal");
    unlink(path);
}

int main(void) {
    signal(SIGALRM, on_alarm);
    alarm(10);
    t_tmp_dir("rlx-regular");
    fifo_file_cases();
    hf_dir_case("HF directory whose config.json is a FIFO", "config.json", NULL);
    hf_dir_case("HF directory whose model.safetensors is a FIFO", "model.safetensors", NULL);
    hf_dir_case("HF directory whose index is a FIFO", "model.safetensors.index.json", NULL);
    hf_dir_case("HF index whose shard is a FIFO", "model-00001-of-00001.safetensors",
                "{\"weight_map\": {\"model.embed_tokens.weight\": \"model-00001-of-00001.safetensors\"}}");
    device_and_regular_cases();
    t_tmp_dir_remove();
    return t_summary("test_regular_file");
}
