/* Fuzz target for config.json parsing (rlx_model_config_from_json): any bytes give a config or an
 * error, never a crash. Seeds: tests/corpus/config_json/ (the fixtures' config.json files and
 * variants). */
#include <stddef.h>
#include <stdint.h>

#include "loader/format/model_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    rlx_model_config c;
    rlx_status_free(rlx_model_config_from_json((const char *)data, size, "fuzz config.json", &c));
    return 0;
}
