/* cli.c — the one-shot subcommands of the onionfront binary (see cli.h). */
#include "sidecar/cli/cli.h"

#include <limits.h>
#include <stdbool.h>
#include <string.h>

#include "sidecar/cli/clientauth_cmd.h"
#include "sidecar/config/config.h"
#include "sidecar/cli/keycmd.h"
#include "sidecar/ops/status_client.h"
#include "sidecar/tor/torcaps.h"
#include "sidecar/core/version.h"

void cli_usage(FILE *f)
{
    fprintf(f,
            "usage: onionfront [-c CONFIG] [run]         run the daemon (default config %s)\n"
            "       onionfront check-config CONFIG       validate a config file and exit\n"
            "       onionfront [-c CONFIG] import-key SERVICE DIR|FILE\n"
            "                                            make a tor HiddenServiceDir or hs_ed25519_secret_key\n"
            "                                            file SERVICE's key (recorded as deliberate)\n"
            "       onionfront [-c CONFIG] export-key SERVICE FILE|-\n"
            "                                            write SERVICE's hs_ed25519_secret_key to a new 0600 FILE\n"
            "       onionfront [-c CONFIG] new-key SERVICE\n"
            "                                            give SERVICE a new key and address on purpose\n"
            "       onionfront [-c CONFIG] client-auth add SERVICE NAME\n"
            "                                            make a client key pair: prints the client's private\n"
            "                                            key line (once) and the config entry to add\n"
            "       onionfront [-c CONFIG] client-auth list SERVICE\n"
            "                                            SERVICE's clients; exit 1 if the files disagree\n"
            "       onionfront [-c CONFIG] client-auth remove SERVICE NAME\n"
            "                                            prints the config entry to delete (then reload);\n"
            "                                            edits nothing\n"
            "       onionfront [-c CONFIG] status [--json] [-s SOCKET] [COMMAND]\n"
            "                                            ask the running daemon (COMMAND: status, services,\n"
            "                                            backends, circuits, metrics, reload, help,\n"
            "                                            restart-tor)\n"
            "                                            without COMMAND: exit 0 ok, 1 degraded, 2 down\n"
            "       onionfront [-c CONFIG] check [-s SOCKET]\n"
            "                                            one Nagios line; exit 0 OK, 1 WARNING, 2 CRITICAL\n"
            "       onionfront [-c CONFIG] log-level [-s SOCKET] LEVEL [SECONDS]\n"
            "                                            log at LEVEL (debug ... error) for SECONDS or until\n"
            "                                            changed; LEVEL config: back to the config's level\n"
            "       onionfront [-c CONFIG] restart-tor [-s SOCKET]\n"
            "                                            restart the tors one at a time (with tor.instances\n"
            "                                            >= 2 visitors see no outage); `status` shows progress\n"
            "       onionfront --version | --help\n",
            CLI_DEFAULT_CONFIG);
}

int cli_options(int argc, char **argv, const char **config_path, int *next)
{
    int i = 1;
    for (; i < argc; i++) {
        if (strcmp(argv[i], "-c") == 0 || strcmp(argv[i], "--config") == 0) {
            if (i + 1 >= argc) {
                cli_usage(stderr);
                return 2;
            }
            *config_path = argv[++i];
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            cli_usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "-V") == 0 || strcmp(argv[i], "--version") == 0) {
            printf("onionfront %s\n", ONIONFRONT_VERSION);
            return 0;
        } else {
            break;
        }
    }
    *next = i;
    return -1;
}

/* The status socket of the config at `path` (loaded into *c, freed by the caller), or NULL (said on
 * stderr for command `what`). */
static const char *cli_status_socket(const char *path, const char *what, struct config **c)
{
    char err[1024];
    if (!(*c = config_load_file(path, err, sizeof(err)))) {
        fprintf(stderr, "onionfront %s: %s: %s (or give the socket with -s SOCKET)\n", what, path, err);
        return NULL;
    }
    return (*c)->status.socket;
}

int cli_status(const char *config_path, int argc, char **argv)
{
    bool json = false;
    const char *socket_path = NULL, *cmd = NULL;
    char *args[2];
    int nargs = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if ((strcmp(argv[i], "-s") == 0 || strcmp(argv[i], "--socket") == 0) && i + 1 < argc) {
            socket_path = argv[++i];
        } else if ((strcmp(argv[i], "-c") == 0 || strcmp(argv[i], "--config") == 0) && i + 1 < argc) {
            config_path = argv[++i];
        } else if (argv[i][0] != '-' && !cmd) {
            cmd = argv[i];
        } else if (argv[i][0] != '-' && nargs < 2) {
            args[nargs++] = argv[i]; /* the command's arguments (log-level LEVEL SECONDS) */
        } else {
            cli_usage(stderr);
            return 2;
        }
    }
    struct config *c = NULL;
    if (!socket_path && !(socket_path = cli_status_socket(config_path, "status", &c)))
        return 1;
    int rc = status_client_run(socket_path, cmd, args, nargs, json, stdout, stderr);
    config_free(c);
    return rc;
}

/* `onionfront check [-s SOCKET]`: one Nagios line. */
static int cli_check_cmd(const char *config_path, int argc, char **argv)
{
    struct config *c = NULL;
    const char *socket_path = argc == 2 && (strcmp(argv[0], "-s") == 0 || strcmp(argv[0], "--socket") == 0)
                                  ? argv[1]
                                  : NULL;
    if (argc != 0 && !socket_path) {
        cli_usage(stderr);
        return 2;
    }
    if (!socket_path && !(socket_path = cli_status_socket(config_path, "check", &c))) {
        printf("ONIONFRONT CRITICAL - cannot read %s\n", config_path);
        return STATUS_EXIT_DOWN;
    }
    int rc = status_client_check(socket_path, stdout);
    config_free(c);
    return rc;
}

int cli_check_config(const char *path)
{
    char err[1024];
    struct config *c = config_load_file(path, err, sizeof(err));
    if (!c) {
        fprintf(stderr, "%s: %s\n", path, err);
        return 1;
    }
    if (torcaps_check_config(c, err, sizeof(err)) < 0) {
        fprintf(stderr, "%s: %s\n", path, err);
        config_free(c);
        return 1;
    }
    printf("%s: OK (%zu service%s, tor %s)\n", path, c->n_services, c->n_services == 1 ? "" : "s",
           tor_mode_str(c->tor.mode));
    config_free(c);
    return 0;
}

static int cli_check_config_cmd(const char *config_path, int argc, char **argv)
{
    return cli_check_config(argc == 1 ? argv[0] : config_path);
}

/* The key commands (keycmd.h): SERVICE and a file or directory, or SERVICE alone. */
static int cli_import_key_cmd(const char *config_path, int argc, char **argv)
{
    (void)argc;
    return keycmd_import_key(config_path, argv[0], argv[1], stdout, stderr);
}

static int cli_export_key_cmd(const char *config_path, int argc, char **argv)
{
    (void)argc;
    return keycmd_export_key(config_path, argv[0], argv[1], stdout, stderr);
}

static int cli_new_key_cmd(const char *config_path, int argc, char **argv)
{
    (void)argc;
    return keycmd_new_key(config_path, argv[0], stdout, stderr);
}

/* `onionfront client-auth add|remove SERVICE NAME` or `client-auth list SERVICE` (clientauth_cmd.h). */
static int cli_client_auth_cmd(const char *config_path, int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[0], "add") == 0)
        return clientauth_cmd_add(config_path, argv[1], argv[2], stdout, stderr);
    if (argc == 3 && strcmp(argv[0], "remove") == 0)
        return clientauth_cmd_remove(config_path, argv[1], argv[2], stdout, stderr);
    if (argc == 2 && strcmp(argv[0], "list") == 0)
        return clientauth_cmd_list(config_path, argv[1], stdout, stderr);
    cli_usage(stderr);
    return 2;
}

/* `onionfront log-level ...` is `onionfront status log-level ...`, `onionfront restart-tor` is `onionfront
 * status restart-tor`: the command word stays first. */
static int cli_via_status_cmd(const char *config_path, int argc, char **argv)
{
    return cli_status(config_path, argc + 1, argv - 1);
}

/* The subcommands: a new one is a row. */
static const struct cli_cmd {
    const char *name;
    int min_args, max_args;
    int (*run)(const char *config_path, int argc, char **argv);
} cli_cmds[] = {
    {"check-config", 0, 1, cli_check_config_cmd},
    {"import-key", 2, 2, cli_import_key_cmd},
    {"export-key", 2, 2, cli_export_key_cmd},
    {"new-key", 1, 1, cli_new_key_cmd},
    {"client-auth", 2, 3, cli_client_auth_cmd},
    {"status", 0, INT_MAX, cli_status},
    {"check", 0, 2, cli_check_cmd},
    {"log-level", 0, INT_MAX, cli_via_status_cmd},
    {"restart-tor", 0, 2, cli_via_status_cmd},
};

int cli_command(const char *config_path, const char *cmd, int argc, char **argv)
{
    for (size_t i = 0; i < sizeof(cli_cmds) / sizeof(cli_cmds[0]); i++)
        if (strcmp(cmd, cli_cmds[i].name) == 0 && argc >= cli_cmds[i].min_args && argc <= cli_cmds[i].max_args)
            return cli_cmds[i].run(config_path, argc, argv);
    cli_usage(stderr);
    return 2;
}
