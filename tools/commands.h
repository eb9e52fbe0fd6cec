/* The `rlx` subcommands. Each lives in tools/cmd_<name>.c and returns a process exit code. */
#ifndef RLX_TOOLS_COMMANDS_H
#define RLX_TOOLS_COMMANDS_H

int rlx_cmd_run(int argc, char **argv);
int rlx_cmd_chat(int argc, char **argv);
int rlx_cmd_inspect(int argc, char **argv);
int rlx_cmd_logits(int argc, char **argv);
int rlx_cmd_generate(int argc, char **argv);
int rlx_cmd_tokenize(int argc, char **argv);
int rlx_cmd_detokenize(int argc, char **argv);
int rlx_cmd_devices(int argc, char **argv);
int rlx_cmd_quantize(int argc, char **argv);
int rlx_cmd_synth(int argc, char **argv);
int rlx_cmd_bench(int argc, char **argv);
int rlx_cmd_validate(int argc, char **argv);
int rlx_cmd_serve(int argc, char **argv);

#endif
