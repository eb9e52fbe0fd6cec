/* Text input of the rlx commands (prompt files, standard input, chat lines), read with a size
 * limit: /dev/zero or an endless pipe must end in an error, not in a process that grows until the
 * machine runs out of memory. */
#ifndef RLX_TOOLS_CLI_INPUT_H
#define RLX_TOOLS_CLI_INPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "rlx/status.h"

/* The most bytes one prompt (a file, standard input, one chat line) may hold. 16 MiB of text is
 * some four million tokens, past the context of any model rlx runs, so no usable prompt is
 * refused; a longer one could only fail later, after the tokenizer had spent memory on it. */
#define RLX_CLI_MAX_TEXT_BYTES ((size_t)16 << 20)
#define RLX_CLI_MAX_TEXT_HELP "16 MiB"

/* Reads all of path ("-": standard input) into *out (owned by the caller, free(); NUL-terminated)
 * of *len bytes. Errors: the file cannot be opened or read (with the reason), or it holds more
 * than max bytes (RLX_ERR_INVALID_ARGUMENT: the input is too large, whatever the machine). */
rlx_status rlx_cli_read_text(const char *path, size_t max, char **out, size_t *len);

/* One line of f, without its "\n" (a "\r" before it stays), into *line (owned by the caller,
 * reused across calls: start with NULL and 0, free() at the end) of *len bytes, NUL-terminated.
 * *got is false at the end of input. A line of more than max bytes is an error; what is read of
 * it is then lost. */
rlx_status rlx_cli_read_line(FILE *f, const char *what, size_t max, char **line, size_t *cap, size_t *len,
                             bool *got);

#endif
