/* rlx's per-user cache directory (XDG Base Directory Specification): $XDG_CACHE_HOME/rlx, else
 * $HOME/.cache/rlx. Shared by the pipeline cache (runtime/vk_pipeline.c) and the bandwidth cache
 * (tools/bench_device.c), so that both live in one place and agree on it. */
#ifndef RLX_LOADER_CACHE_DIR_H
#define RLX_LOADER_CACHE_DIR_H

#include <stdbool.h>
#include <stddef.h>

/* Writes the directory to buf (size bytes) and creates it and its parents (mkdir -p; a failure
 * shows later, when a file in it cannot be opened). false, with buf empty, when neither
 * XDG_CACHE_HOME nor HOME is set (or empty). */
bool rlx_cache_dir(char *buf, size_t size);

#endif
