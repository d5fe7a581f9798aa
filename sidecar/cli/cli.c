/* cli.c — the one-shot subcommands of the onionfront binary (see cli.h). */
#include "sidecar/cli/cli.h"

#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sidecar/cli/clientauth_cmd.h"
#include "sidecar/config/config.h"
#include "sidecar/config/config_errors.h"
#include "sidecar/cli/keycmd.h"
#include "sidecar/cli/onion_cert_cmd.h"
#include "sidecar/cli/torrc_cmd.h"
#include "sidecar/ops/status_client.h"
#include "sidecar/tor/torcaps.h"
#include "sidecar/core/version.h"
#include "sidecar/cli/preflight.h"

#define CLI_HINT "Try 'onionfront --help'."

static int cli_check_config_cmd(const char *config_path, int argc, char **argv);
static int cli_import_key_cmd(const char *config_path, int argc, char **argv);
static int cli_export_key_cmd(const char *config_path, int argc, char **argv);
static int cli_import_torrc_cmd(const char *config_path, int argc, char **argv);
static int cli_new_key_cmd(const char *config_path, int argc, char **argv);
static int cli_onion_csr_cmd(const char *config_path, int argc, char **argv);
static int cli_onion_caa_cmd(const char *config_path, int argc, char **argv);
static int cli_client_auth_cmd(const char *config_path, int argc, char **argv);
static int cli_check_cmd(const char *config_path, int argc, char **argv);
static int cli_log_level_cmd(const char *config_path, int argc, char **argv);
static int cli_restart_tor_cmd(const char *config_path, int argc, char **argv);
static int cli_reload_cmd(const char *config_path, int argc, char **argv);
static int cli_help_cmd(const char *config_path, int argc, char **argv);
static int cli_version_cmd(const char *config_path, int argc, char **argv);

/* The commands: dispatch, argument counts, --help and onionfront(1)'s SYNOPSIS (tests/unit/test_cli.c
 * compares the two) all come from these rows. A new command is a row. */
static const struct cli_cmd {
    const char *name;     /* the command word */
    const char *sub;      /* client-auth's second word, or NULL */
    const char *synopsis; /* after "onionfront ", exactly as the man page's SYNOPSIS has it */
    const char *help;     /* what it does ("\n" continues on the next line) */
    int min_args, max_args; /* after the word(s); -1: the command parses its own */
    int (*run)(const char *config_path, int argc, char **argv); /* NULL: run, main.c's */
} cli_cmds[] = {
    {"run", NULL, "[-c CONFIG] [run]", "run the daemon (default config " CLI_DEFAULT_CONFIG ")", 0, 0, NULL},
    {"check-config", NULL, "check-config [CONFIG]",
     "check a config and what it refers to (tor, tor.user, keys,\ndirectories); creates nothing", 0, 1,
     cli_check_config_cmd},
    {"import-key", NULL,
     "[-c CONFIG] import-key SERVICE DIRECTORY|FILE [--torrc TORRC] [--i-know-it-was-a-single-onion]",
     "make a tor HiddenServiceDir or hs_ed25519_secret_key\nfile SERVICE's key (recorded as deliberate); TORRC:\n"
     "the torrc the directory ran under, which shows its mode", 2, 5, cli_import_key_cmd},
    {"import-torrc", NULL, "import-torrc [TORRC]",
     "print the config for a torrc's onion services (default\n" TORRC_CMD_DEFAULT ") and the import-key commands",
     0, 1, cli_import_torrc_cmd},
    {"export-key", NULL, "[-c CONFIG] export-key SERVICE FILE|-",
     "write SERVICE's hs_ed25519_secret_key to a new 0600 FILE", 2, 2, cli_export_key_cmd},
    {"new-key", NULL, "[-c CONFIG] new-key SERVICE", "give SERVICE a new key and address on purpose", 1, 1,
     cli_new_key_cmd},
    {"onion-csr", NULL, "[-c CONFIG] onion-csr SERVICE --ca-nonce NONCE [--wildcard] [--out FILE] [--publish-address-in-ct-logs]",
     "a CSR signed with SERVICE's onion key for a CA's\n.onion validation (CA/B Forum, RFC 9799 onion-csr-01);\n"
     "NONCE as the CA gives it: an even number of hex digits\nis hex (HARICA), anything else base64 (ACME); a hex:\n"
     "or base64: prefix says which; a client-auth or anonymous\nservice only with --publish-address-in-ct-logs "
     "(the CA\npublishes the certificate, and the address, in CT logs)",
     1, INT_MAX, cli_onion_csr_cmd},
    {"onion-caa", NULL, "[-c CONFIG] onion-caa SERVICE --caa RECORD [--caa RECORD ...] [--expiry SECONDS] [--publish-address-in-ct-logs]",
     "RFC 9799 in-band CAA JSON signed with SERVICE's onion\nkey; RECORD e.g. 'issue \"harica.gr\"'; SECONDS <= 28800",
     1, INT_MAX, cli_onion_caa_cmd},
    {"client-auth", "add", "[-c CONFIG] client-auth add SERVICE NAME",
     "make a client key pair: prints the client's private\nkey line (once) and the config entry to add", 2, 2,
     cli_client_auth_cmd},
    {"client-auth", "list", "[-c CONFIG] client-auth list SERVICE",
     "SERVICE's clients; exit 1 if the files disagree", 1, 1, cli_client_auth_cmd},
    {"client-auth", "remove", "[-c CONFIG] client-auth remove SERVICE NAME",
     "prints the config entry to delete (then reload);\nedits nothing", 2, 2, cli_client_auth_cmd},
    {"status", NULL, "[-c CONFIG] status [--json [--detail]] [-s SOCKET] [COMMAND | SERVICE]",
     "ask the running daemon (COMMAND: status, services,\nservices-detail, backends, circuits, metrics,\n"
     "reload, help, restart-tor; SERVICE: that service\nin full; --detail: per-HSDir detail in the JSON)",
     -1, -1, cli_status},
    {"check", NULL, "[-c CONFIG] check [-s SOCKET]", "one Nagios line: OK, WARNING, CRITICAL or UNKNOWN", -1, -1,
     cli_check_cmd},
    {"log-level", NULL, "[-c CONFIG] log-level [-s SOCKET] LEVEL [SECONDS]",
     "log at LEVEL (debug ... error) for SECONDS or until\nchanged; LEVEL config: back to the config's level", -1,
     -1, cli_log_level_cmd},
    {"reload", NULL, "[-c CONFIG] reload [-s SOCKET]",
     "have the running daemon reload CONFIG and wait for its\nverdict: exit 1 with the reason if it refused (the\n"
     "unit's ExecReload=, so `systemctl reload` fails too)",
     -1, -1, cli_reload_cmd},
    {"restart-tor", NULL, "[-c CONFIG] restart-tor [-s SOCKET]",
     "restart the tors one at a time (with tor.instances\n>= 2 visitors see no outage); `status` shows progress",
     -1, -1, cli_restart_tor_cmd},
    {"version", NULL, "[-c CONFIG] version",
     "onionfront's version and that of the config's tor.binary\n(exit 1 if that tor does not answer)", 0, 0,
     cli_version_cmd},
    {"help", NULL, "--version | --help | help", "the version, or this text", 0, 0, cli_help_cmd},
};
#define CLI_N_CMDS (sizeof(cli_cmds) / sizeof(cli_cmds[0]))

void cli_usage(FILE *f)
{
    for (size_t i = 0; i < CLI_N_CMDS; i++) {
        const struct cli_cmd *c = &cli_cmds[i];
        int n = fprintf(f, "%s onionfront %s", i == 0 ? "usage:" : "      ", c->synopsis);
        /* the description at column 45, or on the next line after a long synopsis */
        const char *h = c->help;
        if (n > 42) { /* at least two spaces before the description */
            fputc('\n', f);
            n = 0;
        }
        while (*h) {
            const char *nl = strchr(h, '\n');
            size_t len = nl ? (size_t)(nl - h) : strlen(h);
            fprintf(f, "%*s%.*s\n", 44 - n, "", (int)len, h);
            n = 0;
            h += len + (nl ? 1 : 0);
        }
    }
    fprintf(f,
            "\nexit status: 0 success; 1 failure (an invalid config, a problem found at start, a command that\n"
            "failed); 2 wrong usage. `status` without COMMAND and `check`: %d ok, %d degraded, %d down or not\n"
            "running, %d unknown (the config cannot be read, the status socket refused this user or gave no\n"
            "answer). Within tor.bootstrap_timeout of the start `check` reads OK \"starting\" (`status`: 1);\n"
            "past it a tor not bootstrapped is down.\n",
            STATUS_EXIT_OK, STATUS_EXIT_DEGRADED, STATUS_EXIT_DOWN, STATUS_EXIT_UNKNOWN);
}

static int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* One line on stderr, "onionfront[ CMD]: <why>", then the --help hint. Returns 2. */
static int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "onionfront%s%s: ", cmd ? " " : "", cmd ? cmd : "");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n" CLI_HINT "\n");
    return 2;
}

int cli_options(int argc, char **argv, const char **config_path, int *next)
{
    int i = 1;
    for (; i < argc; i++) {
        if (strcmp(argv[i], "-c") == 0 || strcmp(argv[i], "--config") == 0) {
            if (i + 1 >= argc)
                return cli_usage_error(NULL, "option %s needs a config file", argv[i]);
            *config_path = argv[++i];
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            cli_usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "-V") == 0 || strcmp(argv[i], "--version") == 0) {
            printf("onionfront %s\n", ONIONFRONT_VERSION);
            return 0;
        } else if (argv[i][0] == '-') {
            return cli_usage_error(NULL, "unknown option '%s'", argv[i]);
        } else {
            break;
        }
    }
    *next = i;
    return -1;
}

/* ---- the status socket's commands ------------------------------------------------------------------- */

/* The options and words of status, check, log-level and restart-tor. */
struct cli_sock_args {
    bool json, detail; /* --json; --detail: the per-HSDir lists in it */
    const char *socket, *config;
    char *words[3]; /* status: COMMAND [ARG ARG]; log-level: LEVEL [SECONDS] */
    int n_words;
};

/* Parse `argv` for command `cmd`: -s/--socket, -c/--config, --json (if `json_ok`), at most `max_words`
 * words. Return 0, or 2 after a usage error. */
static int cli_sock_parse(const char *cmd, int argc, char **argv, bool json_ok, int max_words,
                          struct cli_sock_args *a)
{
    for (int i = 0; i < argc; i++) {
        const char *s = argv[i];
        bool sock = strcmp(s, "-s") == 0 || strcmp(s, "--socket") == 0;
        if (sock || strcmp(s, "-c") == 0 || strcmp(s, "--config") == 0) {
            if (i + 1 >= argc)
                return cli_usage_error(cmd, "option %s needs %s", s, sock ? "a socket path" : "a config file");
            *(sock ? &a->socket : &a->config) = argv[++i];
        } else if (json_ok && strcmp(s, "--json") == 0) {
            a->json = true;
        } else if (json_ok && strcmp(s, "--detail") == 0) {
            a->detail = true;
        } else if (s[0] == '-' && s[1] != '\0') {
            return cli_usage_error(cmd, "unknown option '%s'", s);
        } else if (a->n_words < max_words) {
            a->words[a->n_words++] = argv[i];
        } else {
            return cli_usage_error(cmd, "unexpected argument '%s'", s);
        }
    }
    return 0;
}

/* The status socket: -s, else the config's status.socket (the config into *c, freed by the caller).
 * NULL with the reason on stderr (prefixed "onionfront CMD: ") if the config cannot be read. */
static const char *cli_socket(const char *cmd, const struct cli_sock_args *a, const char *config_path,
                              struct config **c, char *err, size_t errlen)
{
    if (a->socket)
        return a->socket;
    if (a->config)
        config_path = a->config;
    if (!(*c = config_load_file(config_path, err, errlen))) {
        char why[1200];
        snprintf(why, sizeof(why), "%s", err);
        snprintf(err, errlen, "cannot read %s: %s (or give the socket with -s SOCKET)", config_path, why);
        if (cmd)
            fprintf(stderr, "onionfront %s: %s\n", cmd, err);
        return NULL;
    }
    return (*c)->status.socket;
}

/* Send `cmd` with `args` for the command word `prog` the user typed. */
static int cli_send(const char *prog, const char *config_path, const struct cli_sock_args *a, const char *cmd,
                    char *const *args, int nargs)
{
    struct config *c = NULL;
    char err[2048];
    const char *socket_path = cli_socket(prog, a, config_path, &c, err, sizeof(err));
    if (!socket_path)
        return cmd ? 1 : STATUS_EXIT_UNKNOWN; /* the status view cannot tell */
    int rc = status_client_run(socket_path, prog, cmd, args, nargs, a->json, a->detail, stdout, stderr);
    config_free(c);
    return rc;
}

int cli_status(const char *config_path, int argc, char **argv)
{
    struct cli_sock_args a = {0};
    int rc = cli_sock_parse("status", argc, argv, true, 3, &a);
    if (rc)
        return rc;
    const char *cmd = a.n_words ? a.words[0] : NULL;
    if (cmd && strcmp(cmd, "log-level") != 0 && a.n_words > 1)
        return cli_usage_error("status", "%s takes no arguments", cmd);
    return cli_send("status", config_path, &a, cmd, a.words + 1, a.n_words ? a.n_words - 1 : 0);
}

/* `onionfront log-level [-s SOCKET] LEVEL [SECONDS]`: the status socket's log-level. */
static int cli_log_level_cmd(const char *config_path, int argc, char **argv)
{
    struct cli_sock_args a = {0};
    int rc = cli_sock_parse("log-level", argc, argv, false, 2, &a);
    if (rc)
        return rc;
    if (a.n_words == 0)
        return cli_usage_error("log-level", "missing LEVEL (debug, info, notice, warn, error or config)");
    char *end = NULL;
    if (a.n_words == 2 && (strtol(a.words[1], &end, 10) <= 0 || *end))
        return cli_usage_error("log-level", "SECONDS must be a positive number, not '%s'", a.words[1]);
    return cli_send("log-level", config_path, &a, "log-level", a.words, a.n_words);
}

/* `onionfront restart-tor [-s SOCKET]`: the status socket's restart-tor. */
static int cli_restart_tor_cmd(const char *config_path, int argc, char **argv)
{
    struct cli_sock_args a = {0};
    int rc = cli_sock_parse("restart-tor", argc, argv, false, 0, &a);
    return rc ? rc : cli_send("restart-tor", config_path, &a, "restart-tor", NULL, 0);
}

/* `onionfront reload [-s SOCKET]`: the status socket's reload, which answers only when the daemon has
 * applied or refused the config. A config this command cannot read is refused here, and the daemon is
 * not asked: it would read the same file and refuse it for the same reason (and without the file there
 * is no status.socket to ask). */
static int cli_reload_cmd(const char *config_path, int argc, char **argv)
{
    struct cli_sock_args a = {0};
    int rc = cli_sock_parse("reload", argc, argv, false, 0, &a);
    if (rc)
        return rc;
    if (!a.socket) {
        struct config *c = NULL;
        char err[2048];
        const char *path = a.config ? a.config : config_path;
        if (!(c = config_load_file(path, err, sizeof(err)))) {
            fprintf(stderr, "onionfront reload: %s: %s; refused, the running config stays\n", path, err);
            return 1;
        }
        config_free(c);
    }
    return cli_send("reload", config_path, &a, "reload", NULL, 0);
}

/* `onionfront check [-s SOCKET]`: one Nagios line; a config it cannot read is UNKNOWN. */
static int cli_check_cmd(const char *config_path, int argc, char **argv)
{
    struct cli_sock_args a = {0};
    struct config *c = NULL;
    char err[2048];
    int rc = cli_sock_parse("check", argc, argv, false, 0, &a);
    if (rc)
        return rc;
    const char *socket_path = cli_socket(NULL, &a, config_path, &c, err, sizeof(err));
    if (!socket_path) {
        printf("ONIONFRONT UNKNOWN - %s\n", err);
        return STATUS_EXIT_UNKNOWN;
    }
    rc = status_client_check(socket_path, stdout);
    config_free(c);
    return rc;
}

/* ---- the others ------------------------------------------------------------------------------------- */

int cli_check_config(const char *path)
{
    /* Every mistake in one run (config_errors.h), as `haproxy -c` does. */
    struct config_errors errs = {0};
    struct config *c = config_load_file_errors(path, &errs);
    if (!c) {
        for (size_t i = 0; i < errs.n; i++)
            fprintf(stderr, "%s: %s\n", path, errs.msg[i]);
        size_t total = config_errors_count(&errs);
        if (errs.dropped)
            fprintf(stderr, "%s: ... and %zu more\n", path, errs.dropped);
        if (total > 1)
            fprintf(stderr, "%s: %zu errors\n", path, total);
        config_errors_clear(&errs);
        return 1;
    }
    /* What the file refers to (preflight.h): read only, nothing is made. */
    struct preflight *pf = calloc(1, sizeof(*pf));
    if (!pf) {
        fprintf(stderr, "%s: out of memory\n", path);
        config_free(c);
        return 1;
    }
    signal(SIGPIPE, SIG_IGN); /* cp_conn.h: talking to an attached tor */
    struct preflight_opts o = {.scope = PREFLIGHT_ALL, .euid = geteuid()};
    /* root checking a config for the shipped unit (its state directory, its user exists, tor.user unset):
     * the unit runs onionfront as that user, so what exists must be that user's. Another state_dir is a
     * set-up of the operator's own (a root daemon, a test), whose owner the unit does not decide. */
    bool for_unit = c->state_dir && strcmp(c->state_dir, PREFLIGHT_UNIT_STATE_DIR) == 0;
    const struct passwd *unit_user =
        o.euid == 0 && !c->tor.user && for_unit ? getpwnam(PREFLIGHT_UNIT_USER) : NULL;
    if (unit_user) {
        o.check_owner = true;
        o.owner = unit_user->pw_uid;
    }
    size_t n = preflight_run(c, &o, pf);
    for (size_t i = 0; i < n && i < PREFLIGHT_MAX_PROBLEMS; i++)
        fprintf(stderr, "%s: %s\n", path, pf->problems[i]);
    if (n > PREFLIGHT_MAX_PROBLEMS)
        fprintf(stderr, "%s: ... and %zu more\n", path, n - PREFLIGHT_MAX_PROBLEMS);
    if (n == 0)
        printf("%s: OK (%zu service%s, tor %s)\n", path, c->n_services, c->n_services == 1 ? "" : "s",
               tor_mode_str(c->tor.mode));
    free(pf);
    config_free(c);
    return n == 0 ? 0 : 1;
}

static int cli_check_config_cmd(const char *config_path, int argc, char **argv)
{
    return cli_check_config(argc == 1 ? argv[0] : config_path);
}

/* The key commands (keycmd.h): SERVICE and a file or directory, or SERVICE alone. */
static int cli_import_key_cmd(const char *config_path, int argc, char **argv)
{
    struct keycmd_import_opts o = {0};
    const char *words[2];
    int n = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--torrc") == 0) {
            if (i + 1 >= argc)
                return cli_usage_error("import-key", "option --torrc needs the torrc the directory ran under");
            o.torrc = argv[++i];
        } else if (strcmp(argv[i], "--i-know-it-was-a-single-onion") == 0) {
            o.vouch_single = true;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return cli_usage_error("import-key", "unknown option '%s'", argv[i]);
        } else if (n < 2) {
            words[n++] = argv[i];
        } else {
            return cli_usage_error("import-key", "too many arguments ('%s'); usage: onionfront import-key SERVICE "
                                   "DIRECTORY|FILE [--torrc TORRC] [--i-know-it-was-a-single-onion]", argv[i]);
        }
    }
    if (n < 2)
        return cli_usage_error("import-key", "missing argument; usage: onionfront import-key SERVICE DIRECTORY|FILE");
    return keycmd_import_key_opts(config_path, words[0], words[1], &o, stdout, stderr);
}

/* `onionfront import-torrc [TORRC]` (torrc_cmd.h): needs no config. */
static int cli_import_torrc_cmd(const char *config_path, int argc, char **argv)
{
    (void)config_path;
    return torrc_cmd_import(argc == 1 ? argv[0] : TORRC_CMD_DEFAULT, stdout, stderr);
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

/* The certificate commands (onion_cert_cmd.h): SERVICE and options. */
static int cli_onion_csr_cmd(const char *config_path, int argc, char **argv)
{
    return onion_cert_cmd_csr(config_path, argc, argv, stdout, stderr);
}

static int cli_onion_caa_cmd(const char *config_path, int argc, char **argv)
{
    return onion_cert_cmd_caa(config_path, argc, argv, time(NULL), stdout, stderr);
}

/* `onionfront client-auth add|remove SERVICE NAME` or `client-auth list SERVICE` (clientauth_cmd.h);
 * argv[-1] is the word, the counts are checked. */
static int cli_client_auth_cmd(const char *config_path, int argc, char **argv)
{
    const char *word = argv[-1];
    if (strcmp(word, "add") == 0)
        return clientauth_cmd_add(config_path, argv[0], argv[1], stdout, stderr);
    if (strcmp(word, "remove") == 0)
        return clientauth_cmd_remove(config_path, argv[0], argv[1], stdout, stderr);
    (void)argc;
    return clientauth_cmd_list(config_path, argv[0], stdout, stderr);
}

static int cli_help_cmd(const char *config_path, int argc, char **argv)
{
    (void)config_path;
    (void)argc;
    (void)argv;
    cli_usage(stdout);
    return 0;
}

/* `onionfront version`: ours, and the version of the tor a start would run (the config's tor.binary, or
 * tor's default path when the config cannot be read: said so). */
static int cli_version_cmd(const char *config_path, int argc, char **argv)
{
    (void)argc;
    (void)argv;
    char err[1024];
    struct torcaps caps;
    struct config *c = config_load_file(config_path, err, sizeof(err));
    const char *binary = c && c->tor.binary ? c->tor.binary : CONFIG_DEFAULT_TOR_BINARY;
    printf("onionfront %s\n", ONIONFRONT_VERSION);
    if (!c)
        fprintf(stderr, "onionfront version: %s: %s; asking %s\n", config_path, err, binary);
    int rc = torcaps_probe_version(binary, &caps, err, sizeof(err));
    if (rc == 0)
        printf("tor %s (%s)\n", caps.version_text, binary);
    else
        fprintf(stderr, "onionfront version: tor (%s): %s\n", binary, err);
    config_free(c);
    return rc == 0 ? 0 : 1;
}

int cli_command(const char *config_path, const char *cmd, int argc, char **argv)
{
    const struct cli_cmd *row = NULL;
    char name[64];
    bool known = false;
    for (size_t i = 0; i < CLI_N_CMDS && !row; i++) {
        const struct cli_cmd *c = &cli_cmds[i];
        if (strcmp(cmd, c->name) != 0)
            continue;
        known = true;
        if (!c->sub || (argc > 0 && strcmp(argv[0], c->sub) == 0))
            row = c;
    }
    if (!known)
        return cli_usage_error(NULL, "unknown command '%s'", cmd);
    if (!row) /* client-auth without a known word */
        return argc == 0 ? cli_usage_error(cmd, "missing add, list or remove")
                         : cli_usage_error(cmd, "unknown word '%s' (add, list or remove)", argv[0]);
    if (row->sub) {
        argc--;
        argv++;
    }
    snprintf(name, sizeof(name), "%s%s%s", row->name, row->sub ? " " : "", row->sub ? row->sub : "");
    if (row->min_args >= 0 && (argc < row->min_args || argc > row->max_args))
        return cli_usage_error(name, "%s; usage: onionfront %s", argc < row->min_args ? "missing argument" :
                               "too many arguments", row->synopsis);
    if (!row->run) /* `run` itself is main.c's: it comes here only with arguments */
        return cli_usage_error(name, "takes no arguments");
    return row->run(config_path, argc, argv);
}
