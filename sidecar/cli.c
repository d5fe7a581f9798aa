/* cli.c — the one-shot subcommands of the onionfront binary (see cli.h). */
#include "sidecar/cli.h"

#include <limits.h>
#include <stdbool.h>
#include <string.h>

#include "sidecar/config.h"
#include "sidecar/keys.h"
#include "sidecar/status_client.h"

void cli_usage(FILE *f)
{
    fprintf(f,
            "usage: onionfront [-c CONFIG] [run]         run the daemon (default config %s)\n"
            "       onionfront check-config CONFIG       validate a config file and exit\n"
            "       onionfront [-c CONFIG] import-key SERVICE DIR\n"
            "                                            import a tor HiddenServiceDir as SERVICE's key\n"
            "       onionfront [-c CONFIG] status [--json] [-s SOCKET] [COMMAND]\n"
            "                                            ask the running daemon (COMMAND: status, services,\n"
            "                                            backends, circuits, metrics, reload, help)\n"
            "       onionfront --version | --help\n",
            CLI_DEFAULT_CONFIG);
}

int cli_status(const char *config_path, int argc, char **argv)
{
    bool json = false;
    const char *socket_path = NULL, *cmd = NULL;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if ((strcmp(argv[i], "-s") == 0 || strcmp(argv[i], "--socket") == 0) && i + 1 < argc) {
            socket_path = argv[++i];
        } else if ((strcmp(argv[i], "-c") == 0 || strcmp(argv[i], "--config") == 0) && i + 1 < argc) {
            config_path = argv[++i];
        } else if (argv[i][0] != '-' && !cmd) {
            cmd = argv[i];
        } else {
            cli_usage(stderr);
            return 2;
        }
    }
    struct config *c = NULL;
    if (!socket_path) {
        char err[1024];
        if (!(c = config_load_file(config_path, err, sizeof(err)))) {
            fprintf(stderr, "onionfront status: %s: %s (or give the socket with -s SOCKET)\n", config_path, err);
            return 1;
        }
        socket_path = c->status.socket;
    }
    int rc = status_client_run(socket_path, cmd, json, stdout, stderr);
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
    printf("%s: OK (%zu service%s, tor %s)\n", path, c->n_services, c->n_services == 1 ? "" : "s",
           tor_mode_str(c->tor.mode));
    config_free(c);
    return 0;
}

int cli_import_key(const char *config_path, const char *service, const char *src)
{
    char err[1024], address[64];
    struct config *c = config_load_file(config_path, err, sizeof(err));
    if (!c) {
        fprintf(stderr, "%s: %s\n", config_path, err);
        return 1;
    }
    const struct service_conf *sc = config_find_service(c, service);
    if (!sc) {
        fprintf(stderr, "import-key: no service named \"%s\" in %s\n", service, config_path);
        config_free(c);
        return 1;
    }
    int rc = keys_import(src, sc->key_dir, address, err, sizeof(err));
    if (rc < 0)
        fprintf(stderr, "import-key: %s\n", err);
    else
        printf("imported %s into %s: %s.onion\n", src, sc->key_dir, address);
    config_free(c);
    return rc < 0 ? 1 : 0;
}

static int cli_check_config_cmd(const char *config_path, int argc, char **argv)
{
    return cli_check_config(argc == 1 ? argv[0] : config_path);
}

static int cli_import_key_cmd(const char *config_path, int argc, char **argv)
{
    (void)argc;
    return cli_import_key(config_path, argv[0], argv[1]);
}

/* The subcommands: a new one is a row. */
static const struct cli_cmd {
    const char *name;
    int min_args, max_args;
    int (*run)(const char *config_path, int argc, char **argv);
} cli_cmds[] = {
    {"check-config", 0, 1, cli_check_config_cmd},
    {"import-key", 2, 2, cli_import_key_cmd},
    {"status", 0, INT_MAX, cli_status},
};

int cli_command(const char *config_path, const char *cmd, int argc, char **argv)
{
    for (size_t i = 0; i < sizeof(cli_cmds) / sizeof(cli_cmds[0]); i++)
        if (strcmp(cmd, cli_cmds[i].name) == 0 && argc >= cli_cmds[i].min_args && argc <= cli_cmds[i].max_args)
            return cli_cmds[i].run(config_path, argc, argv);
    cli_usage(stderr);
    return 2;
}
