/* cli.h — onionfront's one-shot subcommands (check-config, import-key, status): each reads the config,
 * does one thing and returns an exit code. They run in the CLI process, never inside the daemon.
 *
 * Owns nothing beyond one call. Not the command-line parsing (main.c) nor the daemon. */
#ifndef ONIONFRONT_CLI_H
#define ONIONFRONT_CLI_H

#include <stdio.h>

#define CLI_DEFAULT_CONFIG "/etc/onionfront/onionfront.json"

/* Print the usage text to `f`. */
void cli_usage(FILE *f);

/* Run the subcommand `cmd` ("check-config", "import-key", "status") with its `argc` arguments `argv`.
 * Return its exit code, or 2 with the usage on stderr for an unknown command or a wrong number of
 * arguments. */
int cli_command(const char *config_path, const char *cmd, int argc, char **argv);

/* `onionfront check-config PATH`: validate the file, print "PATH: OK (...)" or the error. Returns 0 or 1. */
int cli_check_config(const char *path);

/* `onionfront import-key SERVICE DIR`: import a tor HiddenServiceDir as SERVICE's key (keys_import).
 * Returns 0 or 1, with a message on stdout or stderr. */
int cli_import_key(const char *config_path, const char *service, const char *src);

/* `onionfront status [--json] [-s SOCKET] [-c CONFIG] [COMMAND]`: the socket from -s, else from the
 * config's status.socket. `argc`/`argv` are the arguments after "status". Returns the exit code (2 on a
 * usage error). */
int cli_status(const char *config_path, int argc, char **argv);

#endif
