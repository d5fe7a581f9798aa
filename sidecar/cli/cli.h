/* cli.h — onionfront's one-shot subcommands (check-config, the key, certificate and client-auth
 * commands, status, log-level): each reads the config, does one thing and returns an exit code. They run
 * in the CLI process, never inside the daemon.
 *
 * Owns the command line's options, the subcommand table, the usage text and its manners: a usage error is
 * one line naming what was wrong and a --help hint, exit 2; the usage text only on --help or `help`.
 * The exit status table is in the usage text and in onionfront(1). Not the choice to run the daemon
 * (main.c), the key commands' flow (keycmd.c), the certificate commands' (onion_cert_cmd.c),
 * client-auth's (clientauth_cmd.c) nor the daemon. */
#ifndef ONIONFRONT_CLI_H
#define ONIONFRONT_CLI_H

#include <stdio.h>

#define CLI_DEFAULT_CONFIG "/etc/onionfront/onionfront.json"

/* Print the usage text to `f`: every command's synopsis (as onionfront(1)'s SYNOPSIS has it) with what
 * it does, and the exit status table. Printed only for --help and `help`. */
void cli_usage(FILE *f);

/* The options before the command: -c/--config PATH (into *config_path), -h/--help, -V/--version.
 * Return -1 with *next the index of the command word (argc if none), or an exit code to return at once
 * (0 after help or the version, 2 after a usage error: one line and a --help hint on stderr). */
int cli_options(int argc, char **argv, const char **config_path, int *next);

/* Run the subcommand `cmd` ("check-config", "import-key", "export-key", "new-key", "onion-csr",
 * "onion-caa", "client-auth", "status", "check", "log-level", "restart-tor", "help") with its `argc`
 * arguments `argv` (argv[-1] is `cmd`). Return its exit code, or 2 for an unknown command or a wrong
 * number of arguments, with one line naming what was wrong and a --help hint on stderr (no usage text). */
int cli_command(const char *config_path, const char *cmd, int argc, char **argv);

/* `onionfront check-config PATH`: validate the file and what it refers to (preflight.h), print
 * "PATH: OK (...)" or each problem. Returns 0 or 1. */
int cli_check_config(const char *path);

/* `onionfront status [--json] [-s SOCKET] [-c CONFIG] [COMMAND [ARG...]]`: the socket from -s, else from
 * the config's status.socket; COMMAND's arguments (at most two: log-level LEVEL SECONDS) go with it.
 * `argc`/`argv` are the arguments after "status". Returns the exit code: 2 on a usage error; without
 * COMMAND status_client.h's (3 when the config cannot be read); with one 0 or 1. */
int cli_status(const char *config_path, int argc, char **argv);

#endif
