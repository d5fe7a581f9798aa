/* test_config.c — unit tests for sidecar/config/config.c: loading and strict validation of the JSON config.
 *
 * Tables: bad config -> the exact error it must produce (one cmocka test per row, named after the row),
 * valid addresses -> their parsed form, pairs of services -> whether they are equal / equal for tor.
 * Plus: every default of a minimal config, every field of a full one, the shipped templates, limits
 * built with jansson, and JSON syntax errors with line/column.
 *
 * JSON in the tables is written with ' for " (see sq()); a JSON backslash escape is written "\\". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <jansson.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sidecar/config/config.h"
#include "sidecar/config/config_errors.h"
#include "tests/fake/tmpdir.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

struct test_state {
    struct config *cfg;
    struct config *cfg2;
    char err[1024];
    char dir[64]; /* a private directory, made by the tests that need files; "" if none */
};

static int setup(void **state)
{
    struct test_state *ts = calloc(1, sizeof *ts);
    if (!ts)
        return -1;
    *state = ts;
    return 0;
}

static int teardown(void **state)
{
    struct test_state *ts = *state;
    config_free(ts->cfg);
    config_free(ts->cfg2);
    int rc = ts->dir[0] ? tmpdir_remove(ts->dir) : 0;
    free(ts);
    return rc;
}

/* A copy of `s` with every ' turned into ". */
static char *sq(const char *s)
{
    char *out = strdup(s);
    assert_non_null(out);
    for (char *p = out; *p; p++)
        if (*p == '\'')
            *p = '"';
    return out;
}

/* Load the single-quoted JSON `s`; on success err is left as it was. */
static struct config *load_sq(const char *s, char *err, size_t errlen)
{
    char *json = sq(s);
    struct config *cfg = config_load_string(json, strlen(json), err, errlen);
    free(json);
    return cfg;
}

/* Load `s`, which must be valid: fail with the loader's message otherwise. */
static struct config *load_ok(struct test_state *ts, const char *s)
{
    ts->err[0] = '\0';
    struct config *cfg = load_sq(s, ts->err, sizeof ts->err);
    if (!cfg)
        fail_msg("config did not load: %s\n  config: %s", ts->err, s);
    return cfg;
}

/* ---- building blocks for the tables ---------------------------------------------------------------- */

#define TOP(x) "{'state_dir':'/var/lib/of','run_dir':'/run/of'," x "}"
#define SVC1 "'services':[{'name':'web','ports':[{'virtual':80,'target':'127.0.0.1:8080'}]}]"
#define WITH(x) TOP(x "," SVC1)                          /* extra top-level members */
#define TOR(x) WITH("'tor':{" x "}")                     /* members of "tor" */
#define SERVICES(x) TOP("'services':[" x "]")            /* the services array */
#define PORTS1 "'ports':[{'virtual':80,'target':'127.0.0.1:8080'}]"
#define SVC(x) SERVICES("{'name':'web'," PORTS1 x "}")   /* extra members of services[0], ","-led */
#define PORT(x) SERVICES("{'name':'web','ports':[{" x "}]}") /* members of ports[0] */
#define TARGET(t) PORT("'virtual':80,'target':'" t "'")
#define BACKENDS(x) PORT("'virtual':80,'backends':[" x "]")
#define HEALTH(x) PORT("'virtual':80,'target':'127.0.0.1:8080','health':{" x "}")
#define STATUS(x) WITH("'status':{" x "}")
#define METRICS(x) WITH("'metrics':{" x "}")
#define LISTEN(x) METRICS("'listen':'" x "'")
#define PROBE(x) WITH("'probe':{" x "}")
#define LIMITS(x) WITH("'limits':{" x "}")
#define OLOC(x) WITH("'onion_location':{" x "}")
#define ATTACH(x) TOR("'mode':'attach','control_socket':'/run/tor/control'" x)

#define P0 "services[0].ports[0]"
#define H0 P0 ".health"
#define ADDR_FORMS "must be host:port, [v6]:port or an absolute unix socket path"
#define OWNED "is managed by onionfront or breaks single-onion mode"
#define LOOPBACK "must be a loopback address and port: 127.0.0.0/8 or [::1], e.g. \"127.0.0.1:9464\""

/* 60 and 108 bytes: one over CONFIG_RUN_DIR_MAX and one over the unix socket path limit. */
#define LONG60 "/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define LONG108 "/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

struct bad_case {
    const char *name;
    const char *json;
    const char *err;
};

#define BAD(json, err) {#json, json, err}

static const struct bad_case bad_cases[] = {
    /* JSON syntax: line and column from jansson */
    BAD("{'state_dir': }", "line 1, column 15: unexpected token near '}'"),
    BAD("{\n  'state_dir': '/a',\n  'state_dir': '/b'\n}",
        "line 3, column 13: duplicate object key near '\"state_dir\"'"),
    BAD("{'a':1} x", "line 1, column 9: end of file expected near 'x'"),
    BAD("", "the file is empty: a config is one JSON object, { ... } (see templates/onionfront.example.json)"),
    BAD("{'state_dir':'\\u0000'}",
        "line 1, column 21: \\u0000 is not allowed without JSON_ALLOW_NUL near '\"\\u0000\"'"),
    BAD("[]", "config: must be a JSON object"),

    /* top level */
    BAD(WITH("'statedir':'/x'"), "statedir: unknown key; did you mean \"state_dir\"?"),
    BAD(WITH("'a\\u0001b':1"), "a\\x01b: unknown key; valid here: state_dir, run_dir, log_level, log_format, tor, services, status, metrics, limits, probe, onion_location"),
    BAD(WITH("'a\\\"b\\\\':1"), "a\\\"b\\\\: unknown key; valid here: state_dir, run_dir, log_level, log_format, tor, services, status, metrics, limits, probe, onion_location"),
    BAD(WITH("'" LONG108 "':1"),
        "/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...: unknown key; valid here: state_dir, run_dir, log_level, log_format, tor, services, status, metrics, limits, probe, onion_location"),
    BAD(SVC(",'key_dir':'/var/lib/of'"),
        "services[0].key_dir: \"/var/lib/of\" overlaps tor's DataDirectory \"/var/lib/of/tor\""),
    BAD("{'run_dir':'/run/of'," SVC1 "}", "state_dir: is required"),
    BAD("{'state_dir':'/var/lib/of'," SVC1 "}", "run_dir: is required"),
    BAD("{'state_dir':5,'run_dir':'/run/of'," SVC1 "}", "state_dir: must be a string, not 5"),
    BAD("{'state_dir':'var/lib/of','run_dir':'/run/of'," SVC1 "}", "state_dir: must be an absolute path"),
    BAD("{'state_dir':'','run_dir':'/run/of'," SVC1 "}", "state_dir: must be an absolute path"),
    BAD("{'state_dir':'/var/../of','run_dir':'/run/of'," SVC1 "}",
        "state_dir: must not contain \".\" or \"..\" components"),
    BAD("{'state_dir':'/var/lib/of/.','run_dir':'/run/of'," SVC1 "}",
        "state_dir: must not contain \".\" or \"..\" components"),
    BAD("{'state_dir':'/var/lib/of\\n','run_dir':'/run/of'," SVC1 "}",
        "state_dir: must not contain control characters"),
    BAD("{'state_dir':'/var/lib/my of','run_dir':'/run/of'," SVC1 "}",
        "state_dir: must be printable ASCII without spaces, '\"', '\\' or '#' in spawn mode (it goes into "
        "tor's torrc)"),
    BAD("{'state_dir':'/var/lib/of','run_dir':'/run/#of'," SVC1 "}",
        "run_dir: may only contain A-Z a-z 0-9 / . _ - + (tor's HiddenServicePort lines name the data-path "
        "sockets under it)"),
    /* attach mode too: the data-path sockets are tor's HiddenServicePort targets in both modes */
    BAD("{'state_dir':'/var/lib/of','run_dir':'/run/#of','tor':{'mode':'attach','control_socket':'/run/tor/c'},"
        SVC1 "}",
        "run_dir: may only contain A-Z a-z 0-9 / . _ - + (tor's HiddenServicePort lines name the data-path "
        "sockets under it)"),
    BAD("{'state_dir':'/var/lib/of','run_dir':'/run/my of','tor':{'mode':'attach','control_socket':'/run/tor/c'},"
        SVC1 "}",
        "run_dir: may only contain A-Z a-z 0-9 / . _ - + (tor's HiddenServicePort lines name the data-path "
        "sockets under it)"),
    BAD("{'state_dir':'/var/lib/of','run_dir':'/run/of@x'," SVC1 "}",
        "run_dir: may only contain A-Z a-z 0-9 / . _ - + (tor's HiddenServicePort lines name the data-path "
        "sockets under it)"),
    BAD("{'state_dir':'/var/lib/of','run_dir':'" LONG60 "'," SVC1 "}",
        "run_dir: must be at most 56 bytes (unix socket paths under it are limited to 107 bytes)"),
    BAD(WITH("'log_level':'loud'"), "log_level: must be one of \"debug\", \"info\", \"notice\", \"warn\", \"error\", not \"loud\""),
    BAD(WITH("'log_level':3"), "log_level: must be one of \"debug\", \"info\", \"notice\", \"warn\", \"error\", not 3"),
    BAD(TOP("'log_level':'info'"), "services: is required"),
    BAD(WITH("'log_format':'syslog'"), "log_format: must be one of \"text\", \"json\", not \"syslog\""),
    BAD(WITH("'log_format':true"), "log_format: must be one of \"text\", \"json\", not true"),
    BAD(TOP("'services':[]"), "services: must have 1-512 entries"),
    BAD(TOP("'services':{}"), "services: must be an array"),
    BAD(TOP("'services':[1]"), "services[0]: must be an object"),
    BAD(WITH("'tor':[]"), "tor: must be an object"),
    BAD(WITH("'tor':null"), "tor: must be an object"),
    BAD(WITH("'status':'x'"), "status: must be an object"),
    BAD(WITH("'metrics':1"), "metrics: must be an object"),
    BAD(WITH("'probe':true"), "probe: must be an object"),
    BAD(WITH("'onion_location':[]"), "onion_location: must be an object"),

    /* tor */
    BAD(TOR("'mod':'spawn'"), "tor.mod: unknown key; did you mean \"mode\"?"),
    BAD(TOR("'mode':'fork'"), "tor.mode: must be one of \"spawn\", \"attach\", not \"fork\""),
    BAD(TOR("'command_timeout':'30'"), "tor.command_timeout: must be an integer, not \"30\""),
    BAD(TOR("'command_timeout':30.5"), "tor.command_timeout: must be an integer, not 30.5"),
    BAD(TOR("'command_timeout':true"), "tor.command_timeout: must be an integer, not true"),
    BAD(TOR("'command_timeout':0"), "tor.command_timeout: invalid value \"0\" (must be 1-600)"),
    BAD(TOR("'command_timeout':601"), "tor.command_timeout: invalid value \"601\" (must be 1-600)"),
    BAD(TOR("'bootstrap_timeout':9"), "tor.bootstrap_timeout: invalid value \"9\" (must be 10-3600)"),
    BAD(TOR("'bootstrap_timeout':3601"), "tor.bootstrap_timeout: invalid value \"3601\" (must be 10-3600)"),
    BAD(TOR("'restart_backoff_max':0"), "tor.restart_backoff_max: invalid value \"0\" (must be 1-3600)"),
    BAD(TOR("'restart_backoff_max':-5"), "tor.restart_backoff_max: invalid value \"-5\" (must be 1-3600)"),
    BAD(TOR("'instances':0"), "tor.instances: invalid value \"0\" (must be 1-4)"),
    BAD(TOR("'instances':5"), "tor.instances: invalid value \"5\" (must be 1-4)"),
    BAD(TOR("'instances':'2'"), "tor.instances: must be an integer, not \"2\""),
    BAD(TOR("'tors_per_service':0"), "tor.tors_per_service: invalid value \"0\" (must be 1-4)"),
    BAD(TOR("'instances':2,'tors_per_service':3"),
        "tor.tors_per_service: must be at most tor.instances (2): each service is hosted by that many of the tors"),
    BAD(TOR("'tors_per_service':2"),
        "tor.tors_per_service: must be at most tor.instances (1): each service is hosted by that many of the tors"),
    BAD(TOR("'drain_timeout':3601"), "tor.drain_timeout: invalid value \"3601\" (must be 0-3600)"),
    BAD(TOR("'drain_timeout':-1"), "tor.drain_timeout: invalid value \"-1\" (must be 0-3600)"),
    BAD(TOR("'renewal':'restart'"), "tor.renewal: must be one of \"pow\", \"readd\", not \"restart\""),
    BAD(TOR("'binary':'tor'"), "tor.binary: must be an absolute path"),
    BAD(TOR("'binary':null"), "tor.binary: must be a string, not null"),
    BAD(TOR("'control_socket':'/run/tor/control'"),
        "tor.control_socket: not allowed in spawn mode (onionfront uses /run/of/control/control.sock)"),
    BAD(TOR("'mode':'attach'"), "tor.control_socket: is required in attach mode"),
    BAD(ATTACH(",'instances':2"), "tor.instances: must be 1 in attach mode (onionfront runs several tors only in "
                                  "spawn mode)"),
    BAD(TOR("'mode':'attach','control_socket':'control'"), "tor.control_socket: must be an absolute path"),
    BAD(TOR("'mode':'attach','control_socket':'/'"), "tor.control_socket: must be an absolute path to a socket"),
    BAD(TOR("'mode':'attach','control_socket':'" LONG108 "'"),
        "tor.control_socket: must be at most 107 bytes (the limit for unix socket paths)"),
    BAD(ATTACH(",'binary':'/usr/bin/tor'"), "tor.binary: only allowed in spawn mode"),
    BAD(ATTACH(",'user':'debian-tor'"), "tor.user: only allowed in spawn mode"),
    BAD(ATTACH(",'extra_torrc':[]"), "tor.extra_torrc: only allowed in spawn mode"),
    BAD(TOR("'user':'Root'"), "tor.user: must be a user name: " CONFIG_USER_NAME_RULE),
    BAD(TOR("'user':''"), "tor.user: must be a user name: " CONFIG_USER_NAME_RULE),
    BAD(TOR("'user':'1tor'"), "tor.user: must be a user name: " CONFIG_USER_NAME_RULE),
    BAD(TOR("'user':0"), "tor.user: must be a string, not 0"),
    BAD(TOR("'user':'a23456789012345678901234567890123'"), "tor.user: must be a user name: " CONFIG_USER_NAME_RULE),
    BAD(TOR("'extra_torrc':'SocksPort 0'"), "tor.extra_torrc: must be an array"),
    BAD(TOR("'extra_torrc':[1]"), "tor.extra_torrc[0]: must be a string"),
    BAD(TOR("'extra_torrc':['SocksPort 9050']"), "tor.extra_torrc[0]: option \"SocksPort\" " OWNED),
    BAD(TOR("'extra_torrc':['TestingTorNetwork 1','HiddenServiceDir /x']"),
        "tor.extra_torrc[1]: option \"HiddenServiceDir\" " OWNED),
    BAD(TOR("'extra_torrc':['hiddenservicesinglehopmode 0']"),
        "tor.extra_torrc[0]: option \"hiddenservicesinglehopmode\" " OWNED),
    BAD(TOR("'extra_torrc':['socksport 0']"), "tor.extra_torrc[0]: option \"socksport\" " OWNED),
    BAD(TOR("'extra_torrc':['SocksP 9050']"), "tor.extra_torrc[0]: option \"SocksP\" " OWNED),
    BAD(TOR("'extra_torrc':['  TransPort 9040']"), "tor.extra_torrc[0]: option \"TransPort\" " OWNED),
    BAD(TOR("'extra_torrc':['+HiddenServicePort 80 1.2.3.4:80']"),
        "tor.extra_torrc[0]: option \"HiddenServicePort\" " OWNED),
    BAD(TOR("'extra_torrc':['/SocksPort']"), "tor.extra_torrc[0]: option \"SocksPort\" " OWNED),
    BAD(TOR("'extra_torrc':['__OwningControllerProcess 1']"),
        "tor.extra_torrc[0]: option \"__OwningControllerProcess\" " OWNED),
    BAD(TOR("'extra_torrc':['NATDPort 1']"), "tor.extra_torrc[0]: option \"NATDPort\" " OWNED),
    BAD(TOR("'extra_torrc':['DNSPort 53']"), "tor.extra_torrc[0]: option \"DNSPort\" " OWNED),
    BAD(TOR("'extra_torrc':['HTTPTunnelPort 8118']"), "tor.extra_torrc[0]: option \"HTTPTunnelPort\" " OWNED),
    BAD(TOR("'extra_torrc':['ControlPort 9051']"), "tor.extra_torrc[0]: option \"ControlPort\" " OWNED),
    BAD(TOR("'extra_torrc':['MetricsPort 0.0.0.0:9035']"), "tor.extra_torrc[0]: option \"MetricsPort\" " OWNED),
    BAD(TOR("'extra_torrc':['MetricsPortPolicy accept *']"), "tor.extra_torrc[0]: option \"MetricsPortPolicy\" " OWNED),
    BAD(TOR("'extra_torrc':['ControlSocket /x']"), "tor.extra_torrc[0]: option \"ControlSocket\" " OWNED),
    BAD(TOR("'extra_torrc':['DataDirectory /tmp']"), "tor.extra_torrc[0]: option \"DataDirectory\" " OWNED),
    BAD(TOR("'extra_torrc':['CookieAuthentication 0']"),
        "tor.extra_torrc[0]: option \"CookieAuthentication\" " OWNED),
    BAD(TOR("'extra_torrc':['CookieAuthFile /x']"), "tor.extra_torrc[0]: option \"CookieAuthFile\" " OWNED),
    BAD(TOR("'extra_torrc':['RunAsDaemon 1']"), "tor.extra_torrc[0]: option \"RunAsDaemon\" " OWNED),
    BAD(TOR("'extra_torrc':['User root']"),
        "tor.extra_torrc[0]: option \"User\" is managed by onionfront (use tor.user)"),
    BAD(TOR("'extra_torrc':['Nickname a\\nSocksPort 9050']"),
        "tor.extra_torrc[0]: must not contain CR, LF or other control characters"),
    BAD(TOR("'extra_torrc':['Nickname a\\r']"),
        "tor.extra_torrc[0]: must not contain CR, LF or other control characters"),
    BAD(TOR("'extra_torrc':['']"), "tor.extra_torrc[0]: must not be empty"),
    BAD(TOR("'extra_torrc':[' \\t ']"), "tor.extra_torrc[0]: must not be empty"),
    BAD(TOR("'extra_torrc':['Nickname a\\\\']"),
        "tor.extra_torrc[0]: must not end with \"\\\" (a torrc line continuation)"),
    BAD(TOR("'extra_torrc':['%include /etc/tor/torrc.d']"),
        "tor.extra_torrc[0]: must start with a torrc option name"),
    BAD(TOR("'extra_torrc':['# comment']"), "tor.extra_torrc[0]: must start with a torrc option name"),
    BAD(TOR("'extra_torrc':['Socks-Port 1']"), "tor.extra_torrc[0]: must start with a torrc option name"),

    /* services[] */
    BAD(SVC(",'portz':[]"), "services[0].portz: unknown key; did you mean \"ports\"?"),
    BAD(SERVICES("{" PORTS1 "}"), "services[0].name: is required"),
    BAD(SERVICES("{'name':7," PORTS1 "}"), "services[0].name: must be a string, not 7"),
    BAD(SERVICES("{'name':'Web'," PORTS1 "}"), "services[0].name: must be " CONFIG_SERVICE_NAME_RULE),
    BAD(SERVICES("{'name':'-web'," PORTS1 "}"), "services[0].name: must be " CONFIG_SERVICE_NAME_RULE),
    BAD(SERVICES("{'name':''," PORTS1 "}"), "services[0].name: must be " CONFIG_SERVICE_NAME_RULE),
    BAD(SERVICES("{'name':'a23456789012345678901234567890123'," PORTS1 "}"),
        "services[0].name: must be " CONFIG_SERVICE_NAME_RULE),
    BAD(SERVICES("{'name':'web'," PORTS1 "},{'name':'api'," PORTS1 "},{'name':'web'," PORTS1 "}"),
        "services[2].name: duplicate service name \"web\""),
    BAD(SVC(",'key_dir':'keys/web'"), "services[0].key_dir: must be an absolute path"),
    BAD(SVC(",'key_dir':5"), "services[0].key_dir: must be a string, not 5"),
    BAD(SERVICES("{'name':'a','key_dir':'/keys/x'," PORTS1 "},{'name':'b','key_dir':'/keys/x/'," PORTS1 "}"),
        "services[1].key_dir: \"/keys/x\" is already used by services[0]"),
    BAD(SERVICES("{'name':'a','key_dir':'/var/lib/of/keys/b'," PORTS1 "},{'name':'b'," PORTS1 "}"),
        "services[1].key_dir: \"/var/lib/of/keys/b\" is already used by services[0]"),
    BAD(SERVICES("{'name':'a','key_dir':'/keys'," PORTS1 "},{'name':'b','key_dir':'/keys/b'," PORTS1 "}"),
        "services[1].key_dir: \"/keys/b\" overlaps services[0].key_dir \"/keys\""),
    BAD(SVC(",'key_dir':'/var/lib/of/tor/keys'"),
        "services[0].key_dir: \"/var/lib/of/tor/keys\" overlaps tor's DataDirectory \"/var/lib/of/tor\""),
    BAD(TOP("'tor':{'instances':2},'services':[{'name':'web','key_dir':'/var/lib/of/instances/k'," PORTS1 "}]"),
        "services[0].key_dir: \"/var/lib/of/instances/k\" overlaps the other tors' directory "
        "\"/var/lib/of/instances\""),
    BAD(SVC(",'key_dir':'/var/lib/of/instances/k'"), /* one tor now; a reload may add more */
        "services[0].key_dir: \"/var/lib/of/instances/k\" overlaps the other tors' directory "
        "\"/var/lib/of/instances\""),
    BAD(SVC(",'key_dir':'/var/lib/of/anonymous/web'"),
        "services[0].key_dir: \"/var/lib/of/anonymous/web\" overlaps the anonymous services' tor directory "
        "\"/var/lib/of/anonymous\""),
    BAD(SVC(",'key_dir':'/var/lib/of/probe-tor/k'"),
        "services[0].key_dir: \"/var/lib/of/probe-tor/k\" overlaps the probe's tor DataDirectory "
        "\"/var/lib/of/probe-tor\""),
    BAD(SVC(",'key_dir':'/var/lib/of/ob-tor'"),
        "services[0].key_dir: \"/var/lib/of/ob-tor\" overlaps Onionbalance's tor DataDirectory "
        "\"/var/lib/of/ob-tor\""),
    BAD(SVC(",'key_dir':'/var/lib/of/ob/master'"),
        "services[0].key_dir: \"/var/lib/of/ob/master\" overlaps Onionbalance's directory \"/var/lib/of/ob\""),
    BAD(SVC(",'key_dir':'/run/of/keys'"), "services[0].key_dir: \"/run/of/keys\" overlaps run_dir \"/run/of\""),
    BAD(SVC(",'key_dir':'/var/lib'"),
        "services[0].key_dir: \"/var/lib\" overlaps tor's DataDirectory \"/var/lib/of/tor\""),
    BAD(SVC(",'max_streams':65536"), "services[0].max_streams: invalid value \"65536\" (must be 0-65535)"),
    BAD(SVC(",'max_streams':-1"), "services[0].max_streams: invalid value \"-1\" (must be 0-65535)"),
    /* services[].dos */
    BAD(SVC(",'dos':[]"), "services[0].dos: must be an object"),
    BAD(SVC(",'dos':{'powx':{}}"), "services[0].dos.powx: unknown key; did you mean \"pow\"?"),
    BAD(SVC(",'dos':{'pow':true}"), "services[0].dos.pow: must be an object"),
    BAD(SVC(",'dos':{'pow':{'enabled':1}}"), "services[0].dos.pow.enabled: must be true or false, not 1"),
    BAD(SVC(",'dos':{'pow':{'effort':1}}"), "services[0].dos.pow.effort: unknown key; valid here: enabled, queue_rate, queue_burst"),
    BAD(SVC(",'dos':{'pow':{'queue_rate':'250'}}"), "services[0].dos.pow.queue_rate: must be an integer, not \"250\""),
    BAD(SVC(",'dos':{'pow':{'queue_rate':-1}}"), "services[0].dos.pow.queue_rate: invalid value \"-1\" (must be 0-2147483647)"),
    BAD(SVC(",'dos':{'pow':{'queue_rate':1.5}}"), "services[0].dos.pow.queue_rate: must be an integer, not 1.5"),
    BAD(SVC(",'dos':{'pow':{'queue_burst':2147483648}}"), "services[0].dos.pow.queue_burst: invalid value \"2147483648\" (must be 0-2147483647)"),
    BAD(SVC(",'dos':{'pow':{'queue_rate':3000}}"),
        "services[0].dos.pow.queue_burst: must be at least queue_rate (3000); tor refuses a smaller burst"),
    BAD(SVC(",'dos':{'pow':{'enabled':true,'queue_rate':10,'queue_burst':9}}"),
        "services[0].dos.pow.queue_burst: must be at least queue_rate (10); tor refuses a smaller burst"),
    BAD(SVC(",'dos':{'intro':{'enabled':'yes'}}"), "services[0].dos.intro.enabled: must be true or false, not \"yes\""),
    BAD(SVC(",'dos':{'intro':{'rate_per_sec':0}}"), "services[0].dos.intro.rate_per_sec: invalid value \"0\" (must be 1-2147483647)"),
    BAD(SVC(",'dos':{'intro':{'burst_per_sec':0}}"), "services[0].dos.intro.burst_per_sec: invalid value \"0\" (must be 1-2147483647)"),
    BAD(SVC(",'dos':{'intro':{'rate_per_sec':300}}"),
        "services[0].dos.intro.burst_per_sec: must be at least rate_per_sec (300); tor refuses a smaller burst"),
    BAD(SVC(",'dos':{'intro':[]}"), "services[0].dos.intro: must be an object"),
    BAD(SVC(",'dos':{'num_intro_points':0}"), "services[0].dos.num_intro_points: invalid value \"0\" (must be 1-20)"),
    BAD(SVC(",'dos':{'num_intro_points':21}"), "services[0].dos.num_intro_points: invalid value \"21\" (must be 1-20)"),
    BAD(SVC(",'dos':{'num_intro_points':'3'}"), "services[0].dos.num_intro_points: must be an integer, not \"3\""),
    BAD(SVC(",'dos':{'max_streams':65536}"), "services[0].dos.max_streams: invalid value \"65536\" (must be 0-65535)"),
    BAD(SVC(",'max_streams':5,'dos':{'max_streams':5}"),
        "services[0].dos.max_streams: set it here or as services[0].max_streams, not both"),
    BAD(SVC(",'dos':{'max_streams_close_circuit':1}"),
        "services[0].dos.max_streams_close_circuit: must be true or false, not 1"),
    BAD(SVC(",'dos':{'max_streams_close_circuit':true}"),
        "services[0].dos.max_streams_close_circuit: needs a max_streams above 0 (0 = unlimited, nothing to exceed)"),
    BAD(SERVICES("{'name':'a','key_dir':'/k/a'," PORTS1 "},{'name':'b','key_dir':'/k/b'," PORTS1
                 ",'dos':{'pow':{'queue_burst':-5}}}"),
        "services[1].dos.pow.queue_burst: invalid value \"-5\" (must be 0-2147483647)"),
    /* services[].client_auth */
#define ALICE "{'name':'alice','public_key':'N2NU7BSRL6YODZCYPN4CREB54TYLKGIE2KYOQWLFYC23ZJVCE5DQ'}"
    BAD(SVC(",'client_auth':[" ALICE "],'onion_location':true"),
        "services[0].onion_location: cannot be true with client_auth: Onion-Location would advertise a private "
        "service's address to every visitor of the clearnet site"),
    BAD(SVC(",'client_auth':{}"), "services[0].client_auth: must be an array"),
    BAD(SVC(",'client_auth':[]"), "services[0].client_auth: must have 1-256 entries"),
    BAD(SVC(",'client_auth':[{'name':'a'}]"), "services[0].client_auth[0].public_key: is required"),
    BAD(SVC(",'client_auth':[{'name':'A b','public_key':'x'}]"),
        "services[0].client_auth[0].name: must be " CONFIG_SERVICE_NAME_RULE),
    BAD(SVC(",'client_auth':[{'name':'a','public_key':'N2NU7BSRL6YODZCYPN4CREB54TYLKGIE2KYOQWLFYC23ZJVCE5D'}]"),
        "services[0].client_auth[0].public_key: must be an x25519 public key in base32 (52 characters A-Z 2-7)"),
    BAD(SVC(",'client_auth':[{'name':'a','public_key':'N2NU7BSRL6YODZCYPN4CREB54TYLKGIE2KYOQWLFYC23ZJVCE5DQ'},"
            "{'name':'a','public_key':'N2NU7BSRL6YODZCYPN4CREB54TYLKGIE2KYOQWLFYC23ZJVCE5DQ'}]"),
        "services[0].client_auth[1].name: duplicate client name \"a\""),
    BAD(SVC(",'client_auth':[{'name':'a','public_key':'N2NU7BSRL6YODZCYPN4CREB54TYLKGIE2KYOQWLFYC23ZJVCE5DQ'},"
            "{'name':'b','public_key':'n2nu7bsrl6yodzcypn4creb54tylkgie2kyoqwlfyc23zjvce5dq'}]"),
        "services[0].client_auth[1].public_key: the same key as client \"a\""),
    BAD(SVC(",'client_auth':[{'name':'a','public_key':'N2NU7BSRL6YODZCYPN4CREB54TYLKGIE2KYOQWLFYC23ZJVCE5DQ','x':1}]"),
        "services[0].client_auth[0].x: unknown key; valid here: name, public_key"),
    BAD(SERVICES("{'name':'web'}"), "services[0].ports: is required"),
    BAD(SERVICES("{'name':'web','ports':[]}"), "services[0].ports: must have 1-64 entries"),
    BAD(SERVICES("{'name':'web','ports':{}}"), "services[0].ports: must be an array"),
    BAD(SERVICES("{'name':'web','ports':['80']}"), "services[0].ports[0]: must be an object"),

    /* ports[] */
    BAD(PORT("'virtual':80,'tagret':'127.0.0.1:8080'"), P0 ".tagret: unknown key; did you mean \"target\"? (and 1 more error: onionfront check-config lists them all)"),
    BAD(PORT("'target':'127.0.0.1:8080'"), P0 ".virtual: is required"),
    BAD(PORT("'virtual':'80','target':'127.0.0.1:8080'"), P0 ".virtual: must be an integer, not \"80\""),
    BAD(PORT("'virtual':0,'target':'127.0.0.1:8080'"), P0 ".virtual: invalid port \"0\" (must be 1-65535)"),
    BAD(PORT("'virtual':65536,'target':'127.0.0.1:8080'"), P0 ".virtual: invalid port \"65536\" (must be 1-65535)"),
    BAD(SERVICES("{'name':'web','ports':[{'virtual':80,'target':'127.0.0.1:1'},"
                 "{'virtual':80,'target':'127.0.0.1:2'}]}"),
        "services[0].ports[1].virtual: duplicate virtual port 80"),
    BAD(PORT("'virtual':80,'target':'127.0.0.1:8080','backends':[{'address':'127.0.0.1:8081'}]"),
        P0 ": must have either \"target\" or \"backends\", not both"),
    BAD(PORT("'virtual':80"), P0 ": must have \"target\" or \"backends\""),
    BAD(PORT("'virtual':80,'target':8080"), P0 ".target: must be a string, not 8080"),
    BAD(TARGET("1.2.3.4"), P0 ".target: " ADDR_FORMS),
    BAD(TARGET("host:0"), P0 ".target: port must be 1-65535"),
    BAD(TARGET("host:70000"), P0 ".target: port must be 1-65535"),
    BAD(TARGET("host:123456"), P0 ".target: port must be 1-65535"),
    BAD(TARGET("host:http"), P0 ".target: " ADDR_FORMS),
    BAD(TARGET("host:"), P0 ".target: " ADDR_FORMS),
    BAD(TARGET("host:-1"), P0 ".target: " ADDR_FORMS),
    BAD(TARGET(":80"), P0 ".target: " ADDR_FORMS),
    BAD(TARGET(""), P0 ".target: " ADDR_FORMS),
    BAD(TARGET("[::1"), P0 ".target: missing \"]\" after the IPv6 address"),
    BAD(TARGET("[::1]"), P0 ".target: " ADDR_FORMS),
    BAD(TARGET("[::1]80"), P0 ".target: " ADDR_FORMS),
    BAD(TARGET("[::1]:0"), P0 ".target: port must be 1-65535"),
    BAD(TARGET("[1.2.3.4]:80"), P0 ".target: not a valid IPv6 address inside [ ]"),
    BAD(TARGET("[]:80"), P0 ".target: not a valid IPv6 address inside [ ]"),
    BAD(TARGET("::1:80"), P0 ".target: IPv6 addresses must be written in brackets: [v6]:port"),
    BAD(TARGET("1.2.3.256:80"), P0 ".target: \"1.2.3.256\" is not a valid IPv4 address"),
    BAD(TARGET("1.2.3:80"), P0 ".target: \"1.2.3\" is not a valid IPv4 address"),
    BAD(TARGET("bad host:80"), P0 ".target: invalid host name \"bad host\""),
    BAD(TARGET("-bad:80"), P0 ".target: invalid host name \"-bad\""),
    BAD(TARGET("a..b:80"), P0 ".target: invalid host name \"a..b\""),
    BAD(TARGET("a.:80"), P0 ".target: invalid host name \"a.\""),
    BAD(TARGET("a-.b:80"), P0 ".target: invalid host name \"a-.b\""),
    BAD(TARGET("a.b/c:80"), P0 ".target: invalid host name \"a.b/c\""),
    BAD(TARGET("relative/path"), P0 ".target: " ADDR_FORMS),
    BAD(TARGET("unix:relative/path"), P0 ".target: unix socket path must be absolute"),
    BAD(TARGET("unix:"), P0 ".target: unix socket path must be absolute"),
    BAD(TARGET("/"), P0 ".target: " ADDR_FORMS),
    BAD(TARGET("/run/../web.sock"), P0 ".target: unix socket path must not contain \".\" or \"..\" components"),
    BAD(TARGET(LONG108), P0 ".target: unix socket path must be at most 107 bytes"),
    BAD(PORT("'virtual':80,'backends':{}"), P0 ".backends: must be an array"),
    BAD(BACKENDS(""), P0 ".backends: must have 1-64 entries"),
    BAD(BACKENDS("'127.0.0.1:8081'"), P0 ".backends[0]: must be an object"),
    BAD(BACKENDS("{'adress':'127.0.0.1:8081'}"), P0 ".backends[0].adress: unknown key; did you mean \"address\"? (and 1 more error: onionfront check-config lists them all)"),
    BAD(BACKENDS("{'name':'a'}"), P0 ".backends[0].address: is required"),
    BAD(BACKENDS("{'address':['127.0.0.1:8081']}"), P0 ".backends[0].address: must be a string, not an array"),
    BAD(BACKENDS("{'address':'127.0.0.1:1'},{'address':'localhost'}"), P0 ".backends[1].address: " ADDR_FORMS),
    BAD(BACKENDS("{'name':'a b','address':'127.0.0.1:8081'}"), P0 ".backends[0].name: must be " CONFIG_BACKEND_NAME_RULE),
    BAD(BACKENDS("{'name':'','address':'127.0.0.1:8081'}"), P0 ".backends[0].name: must be " CONFIG_BACKEND_NAME_RULE),
    BAD(BACKENDS("{'name':'a2345678901234567890123456789012345678901234567890123456789012345','address':'127.0.0.1:1'}"),
        P0 ".backends[0].name: must be " CONFIG_BACKEND_NAME_RULE),
    BAD(BACKENDS("{'name':'a','address':'127.0.0.1:1'},{'name':'a','address':'127.0.0.1:2'}"),
        P0 ".backends[1].name: duplicate backend name \"a\""),
    BAD(BACKENDS("{'name':'web-80-1','address':'127.0.0.1:1'},{'address':'127.0.0.1:2'}"),
        P0 ".backends[1]: default name \"web-80-1\" is already used by backends[0]"),
    BAD(BACKENDS("{'address':'127.0.0.1:1'},{'address':'127.0.0.1:1'}"),
        P0 ".backends[1].address: \"127.0.0.1:1\" is already used by backends[0]"),
    BAD(BACKENDS("{'address':'[::1]:1'},{'address':'[0:0::1]:1'}"),
        P0 ".backends[1].address: \"[0:0::1]:1\" is already used by backends[0]"),
    BAD(BACKENDS("{'address':'/run/a.sock'},{'address':'unix:/run//a.sock'}"),
        P0 ".backends[1].address: \"unix:/run//a.sock\" is already used by backends[0]"),
    BAD(BACKENDS("{'address':'127.0.0.1:1','weight':257}"), P0 ".backends[0].weight: invalid value \"257\" (must be 0-256)"),
    BAD(BACKENDS("{'address':'127.0.0.1:1','weight':-1}"), P0 ".backends[0].weight: invalid value \"-1\" (must be 0-256)"),
    BAD(BACKENDS("{'address':'127.0.0.1:1','weight':1.5}"), P0 ".backends[0].weight: must be an integer, not 1.5"),
    BAD(PORT("'virtual':80,'target':'127.0.0.1:1','balance':'random'"),
        P0 ".balance: must be one of \"round_robin\", \"least_conn\", \"circuit\", not \"random\""),
    BAD(PORT("'virtual':80,'target':'127.0.0.1:1','connect_timeout_ms':99"),
        P0 ".connect_timeout_ms: invalid value \"99\" (must be 100-60000)"),
    BAD(PORT("'virtual':80,'target':'127.0.0.1:1','connect_timeout_ms':60001"),
        P0 ".connect_timeout_ms: invalid value \"60001\" (must be 100-60000)"),
    BAD(PORT("'virtual':80,'target':'127.0.0.1:1','max_streams_per_circuit':65536"),
        P0 ".max_streams_per_circuit: invalid value \"65536\" (must be 0-65535)"),
    BAD(PORT("'virtual':80,'target':'127.0.0.1:1','circuit_stream_rate':65536"),
        P0 ".circuit_stream_rate: invalid value \"65536\" (must be 0-65535)"),
    BAD(PORT("'virtual':80,'target':'127.0.0.1:1','circuit_stream_rate':'5'"), P0 ".circuit_stream_rate: must be an integer, not \"5\""),
    BAD(PORT("'virtual':80,'target':'127.0.0.1:1','circuit_stream_rate':5,'circuit_stream_burst':0"),
        P0 ".circuit_stream_burst: invalid value \"0\" (must be 1-131070)"),
    BAD(PORT("'virtual':80,'target':'127.0.0.1:1','circuit_stream_burst':5"),
        P0 ".circuit_stream_burst: needs circuit_stream_rate > 0"),
    BAD(PORT("'virtual':80,'target':'127.0.0.1:1','idle_timeout':86401"), P0 ".idle_timeout: invalid value \"86401\" (must be 0-86400)"),
    BAD(PORT("'virtual':80,'target':'127.0.0.1:1','idle_timeout':-1"), P0 ".idle_timeout: invalid value \"-1\" (must be 0-86400)"),
    BAD(PORT("'virtual':80,'target':'127.0.0.1:1','proxy_protocol':'yes'"),
        P0 ".proxy_protocol: must be true or false, not \"yes\""),
    BAD(PORT("'virtual':80,'target':'127.0.0.1:1','proxy_protocol':1"),
        P0 ".proxy_protocol: must be true or false, not 1"),

    /* health */
    BAD(PORT("'virtual':80,'target':'127.0.0.1:1','health':'tcp'"), H0 ": must be an object"),
    BAD(HEALTH("'intervall':1000"), H0 ".intervall: unknown key; valid here: type, interval_ms, timeout_ms, rise, fall, method, path, host, expect_status, ca_file, tls_verify"),
    BAD(HEALTH("'type':'icmp'"), H0 ".type: must be one of \"tcp\", \"http\", \"https\", \"none\", not \"icmp\""),
    BAD(HEALTH("'interval_ms':99"), H0 ".interval_ms: invalid value \"99\" (must be 100-3600000)"),
    BAD(HEALTH("'interval_ms':3600001"), H0 ".interval_ms: invalid value \"3600001\" (must be 100-3600000)"),
    BAD(HEALTH("'timeout_ms':49"), H0 ".timeout_ms: invalid value \"49\" (must be 50-60000)"),
    BAD(HEALTH("'timeout_ms':60001,'interval_ms':100000"), H0 ".timeout_ms: invalid value \"60001\" (must be 50-60000)"),
    BAD(HEALTH("'interval_ms':1000,'timeout_ms':1000"), H0 ".timeout_ms: must be less than interval_ms (1000)"),
    BAD(HEALTH("'timeout_ms':3000"), H0 ".timeout_ms: must be less than interval_ms (2000)"),
    BAD(HEALTH("'interval_ms':500"), H0 ".interval_ms: must be greater than timeout_ms (1000)"),
    BAD(HEALTH("'rise':0"), H0 ".rise: invalid value \"0\" (must be 1-100)"),
    BAD(HEALTH("'fall':101"), H0 ".fall: invalid value \"101\" (must be 1-100)"),
    BAD(HEALTH("'path':'/healthz'"), H0 ".path: only allowed for http and https checks"),
    BAD(HEALTH("'type':'none','expect_status':[200]"), H0 ".expect_status: only allowed for http and https checks"),
    BAD(HEALTH("'type':'tcp','method':'GET'"), H0 ".method: only allowed for http and https checks"),
    BAD(HEALTH("'type':'tcp','host':null"), H0 ".host: only allowed for http and https checks"),
    BAD(HEALTH("'type':'http','method':'POST'"), H0 ".method: must be one of \"GET\", \"HEAD\", \"OPTIONS\", not \"POST\""),
    BAD(HEALTH("'type':'http','method':'get'"), H0 ".method: must be one of \"GET\", \"HEAD\", \"OPTIONS\", not \"get\""),
    BAD(HEALTH("'type':'http','path':'healthz'"), H0 ".path: must start with \"/\""),
    BAD(HEALTH("'type':'http','path':''"), H0 ".path: must start with \"/\""),
    BAD(HEALTH("'type':'http','path':'/a b'"), H0 ".path: must be printable ASCII without spaces"),
    BAD(HEALTH("'type':'https','path':'/a\\r\\nX: y'"), H0 ".path: must be printable ASCII without spaces"),
    BAD(HEALTH("'type':'http','path':1"), H0 ".path: must be a string, not 1"),
    BAD(HEALTH("'type':'http','host':''"), H0 ".host: must not be empty (use null for the default)"),
    BAD(HEALTH("'type':'http','host':5"), H0 ".host: must be a string or null"),
    BAD(HEALTH("'type':'http','host':'a b'"), H0 ".host: must be printable ASCII without spaces"),
    BAD(HEALTH("'type':'http','expect_status':200"), H0 ".expect_status: must be an array"),
    BAD(HEALTH("'type':'http','expect_status':[]"), H0 ".expect_status: must have 1-32 entries"),
    BAD(HEALTH("'type':'http','expect_status':[99]"), H0 ".expect_status[0]: must be 100-599"),
    BAD(HEALTH("'type':'http','expect_status':[200,600]"), H0 ".expect_status[1]: must be 100-599"),
    BAD(HEALTH("'type':'http','expect_status':['200']"), H0 ".expect_status[0]: must be an integer"),
    BAD(HEALTH("'type':'http','expect_status':[200,204,200]"), H0 ".expect_status[2]: duplicate status 200"),
    BAD(HEALTH("'type':'http','ca_file':'/etc/of/ca.pem'"), H0 ".ca_file: only allowed for https checks"),
    BAD(HEALTH("'ca_file':'/etc/of/ca.pem'"), H0 ".ca_file: only allowed for https checks"),
    BAD(HEALTH("'type':'none','tls_verify':true"), H0 ".tls_verify: only allowed for https checks"),
    BAD(HEALTH("'type':'http','tls_verify':false"), H0 ".tls_verify: only allowed for https checks"),
    BAD(HEALTH("'type':'https','tls_verify':'no'"), H0 ".tls_verify: must be true or false, not \"no\""),
    BAD(HEALTH("'type':'https','tls_verify':0"), H0 ".tls_verify: must be true or false, not 0"),
    BAD(HEALTH("'type':'https','ca_file':5"), H0 ".ca_file: must be a string, not 5"),
    BAD(HEALTH("'type':'https','ca_file':null"), H0 ".ca_file: must be a string, not null"),
    BAD(HEALTH("'type':'https','ca_file':''"), H0 ".ca_file: must be an absolute path"),
    BAD(HEALTH("'type':'https','ca_file':'ca.pem'"), H0 ".ca_file: must be an absolute path"),
    BAD(HEALTH("'type':'https','ca_file':'/etc/a\\nb'"), H0 ".ca_file: must not contain control characters"),
    BAD(HEALTH("'type':'https','ca_file':'/etc/../ca.pem'"),
        H0 ".ca_file: must not contain \".\" or \"..\" components"),
    BAD(HEALTH("'type':'https','ca_file':'/'"), H0 ".ca_file: \"/\" is not a regular file"),
    BAD(HEALTH("'type':'https','ca_file':'/dev/null'"), H0 ".ca_file: \"/dev/null\" is not a regular file"),
    BAD(HEALTH("'type':'https','tls_verify':false,'ca_file':'/etc/of/ca.pem'"),
        H0 ".ca_file: not allowed with tls_verify false (no certificate is checked)"),

    /* status */
    BAD(STATUS("'sock':'/x'"), "status.sock: unknown key; valid here: socket, allowed_uids, allowed_gids, admin_uids, admin_gids"),
    BAD(STATUS("'socket':'status.sock'"), "status.socket: must be an absolute path"),
    BAD(STATUS("'socket':'" LONG108 "'"),
        "status.socket: must be at most 107 bytes (the limit for unix socket paths)"),
    BAD(STATUS("'socket':'/run/of/control/control.sock'"), "status.socket: must differ from tor's control socket"),
    BAD(STATUS("'allowed_uids':0"), "status.allowed_uids: must be an array"),
    BAD(STATUS("'allowed_uids':[0,-1]"), "status.allowed_uids[1]: must be 0-4294967294"),
    BAD(STATUS("'allowed_uids':[4294967295]"), "status.allowed_uids[0]: must be 0-4294967294"),
    BAD(STATUS("'allowed_uids':[0,1000,0]"), "status.allowed_uids[2]: duplicate uid 0"),
    BAD(STATUS("'allowed_gids':['0']"), "status.allowed_gids[0]: must be an integer"),
    BAD(STATUS("'allowed_gids':[5,5]"), "status.allowed_gids[1]: duplicate gid 5"),
    BAD(STATUS("'admin_uids':1000"), "status.admin_uids: must be an array"),
    BAD(STATUS("'admin_uids':[-1]"), "status.admin_uids[0]: must be 0-4294967294"),
    BAD(STATUS("'admin_uids':[1000,1000]"), "status.admin_uids[1]: duplicate uid 1000"),
    BAD(STATUS("'admin_gids':[true]"), "status.admin_gids[0]: must be an integer"),
    BAD(STATUS("'admin_gids':[4294967295]"), "status.admin_gids[0]: must be 0-4294967294"),
    BAD(STATUS("'admins':[0]"), "status.admins: unknown key; valid here: socket, allowed_uids, allowed_gids, admin_uids, admin_gids"),

    /* metrics */
    BAD(METRICS("'listn':'127.0.0.1:9464'"), "metrics.listn: unknown key; did you mean \"listen\"?"),
    BAD(LISTEN("0.0.0.0:9464"), "metrics.listen: " LOOPBACK),
    BAD(LISTEN("[::]:9464"), "metrics.listen: " LOOPBACK),
    BAD(LISTEN("10.0.0.1:9464"), "metrics.listen: " LOOPBACK),
    BAD(LISTEN("[::ffff:127.0.0.1]:9464"), "metrics.listen: " LOOPBACK),
    BAD(LISTEN("localhost:9464"), "metrics.listen: " LOOPBACK),
    BAD(LISTEN("/run/of/metrics.sock"), "metrics.listen: " LOOPBACK),
    BAD(LISTEN("127.0.0.1"), "metrics.listen: " LOOPBACK),
    BAD(LISTEN("127.0.0.1:0"), "metrics.listen: port must be 1-65535"),
    BAD(METRICS("'listen':9464"), "metrics.listen: must be a string or null"),

    /* limits */
    BAD(WITH("'limits':5"), "limits: must be an object"),
    BAD(LIMITS("'max_streams':5"), "limits.max_streams: unknown key; valid here: max_open_streams"),
    BAD(LIMITS("'max_open_streams':-1"), "limits.max_open_streams: invalid value \"-1\" (must be 0-1000000)"),
    BAD(LIMITS("'max_open_streams':1000001"), "limits.max_open_streams: invalid value \"1000001\" (must be 0-1000000)"),
    BAD(LIMITS("'max_open_streams':'auto'"), "limits.max_open_streams: must be an integer, not \"auto\""),

    /* probe */
    BAD(PROBE("'intervall':300"), "probe.intervall: unknown key; did you mean \"interval\"?"),
    BAD(PROBE("'interval':4"), "probe.interval: invalid value \"4\" (must be 5-86400)"),
    BAD(PROBE("'timeout':601"), "probe.timeout: invalid value \"601\" (must be 5-600)"),
    BAD(PROBE("'window':0"), "probe.window: invalid value \"0\" (must be 1-100)"),
    BAD(PROBE("'window':3,'down_after':4"), "probe.down_after: invalid value \"4\" (must be 1-3)"),
    BAD(PROBE("'client_tor':1"), "probe.client_tor: must be true or false, not 1"),
    BAD(PROBE("'hsfetch_interval':9"), "probe.hsfetch_interval: invalid value \"9\" (must be 10-86400)"),
    BAD(PROBE("'hsfetch_interval':86401"), "probe.hsfetch_interval: invalid value \"86401\" (must be 10-86400)"),
    BAD(PROBE("'republish_deadline':3601"), "probe.republish_deadline: invalid value \"3601\" (must be 10-3600)"),
    BAD(PROBE("'republish_deadline':'120'"), "probe.republish_deadline: must be an integer, not \"120\""),

    /* onion_location */
    BAD(OLOC("'dir':'/etc/nginx/of','onchange':[]"), "onion_location.onchange: unknown key; did you mean \"on_change\"?"),
    BAD(OLOC("'on_change':['/bin/true']"), "onion_location.dir: is required"),
    BAD(OLOC("'dir':'etc/nginx'"), "onion_location.dir: must be an absolute path"),
    BAD(OLOC("'dir':'/etc/nginx','on_change':'/usr/sbin/nginx -s reload'"),
        "onion_location.on_change: must be an array"),
    BAD(OLOC("'dir':'/etc/nginx','on_change':['nginx','-s','reload']"),
        "onion_location.on_change[0]: must be an absolute path (the command is run without a shell or PATH "
        "search)"),
    BAD(OLOC("'dir':'/etc/nginx','on_change':['/usr/sbin/nginx',1]"), "onion_location.on_change[1]: must be a string"),
    BAD(OLOC("'dir':'/etc/nginx','listen':'web:8081'"), "onion_location.listen: must be an IP address and port, e.g. \"10.0.0.5:8081\" or \"[::1]:8081\""),
    BAD(OLOC("'dir':'/etc/nginx','listen':8081"), "onion_location.listen: must be a string or null"),
    /* a farm-facing endpoint must name its web servers; entries are networks of listen's family */
    BAD(OLOC("'dir':'/etc/nginx','listen':'10.0.0.5:8081'"),
        "onion_location.allow: is required when listen (10.0.0.5:8081) is not a loopback address: list the web "
        "servers' addresses or networks, e.g. [\"10.0.0.0/24\"]"),
    BAD(OLOC("'dir':'/etc/nginx','listen':'[fd00::5]:8081'"), "onion_location.allow: is required when listen ([fd00::5]:8081) is not a loopback address: list the web "
        "servers' addresses or networks, e.g. [\"10.0.0.0/24\"]"),
    BAD(OLOC("'dir':'/etc/nginx','allow':['10.0.0.0/24']"), "onion_location.allow: needs listen: it says who may connect to it"),
    BAD(OLOC("'dir':'/etc/nginx','listen':'10.0.0.5:8081','allow':[]"), "onion_location.allow: must have 1-64 entries"),
    BAD(OLOC("'dir':'/etc/nginx','listen':'10.0.0.5:8081','allow':'10.0.0.0/24'"),
        "onion_location.allow: must be an array"),
    BAD(OLOC("'dir':'/etc/nginx','listen':'10.0.0.5:8081','allow':['10.0.0.0/24',7]"),
        "onion_location.allow[1]: must be a string"),
    BAD(OLOC("'dir':'/etc/nginx','listen':'10.0.0.5:8081','allow':['10.0.0.5/24']"),
        "onion_location.allow[0]: host bits set: did you mean 10.0.0.0/24?"),
    BAD(OLOC("'dir':'/etc/nginx','listen':'10.0.0.5:8081','allow':['web1']"),
        "onion_location.allow[0]: must be an IP address or network, e.g. \"10.0.0.5\", \"10.0.0.0/24\" or "
        "\"fd00::/64\""),
    BAD(OLOC("'dir':'/etc/nginx','listen':'10.0.0.5:8081','allow':['fd00::/64']"),
        "onion_location.allow[0]: fd00::/64 can never match: listen (10.0.0.5:8081) is IPv4"),
    /* services[].mode and onion_location */
    BAD(SVC(",'mode':'hidden'"), "services[0].mode: must be one of \"single\", \"anonymous\", not \"hidden\""),
    BAD(SVC(",'mode':1"), "services[0].mode: must be one of \"single\", \"anonymous\", not 1"),
    BAD(SVC(",'onion_location':'yes'"), "services[0].onion_location: must be true or false, not \"yes\""),
    BAD(TOP("'tor':{'mode':'attach','control_socket':'/run/tor/control'},'services':[{'name':'web','mode':"
            "'anonymous'," PORTS1 "}]"),
        "services[0].mode: \"anonymous\" needs tor.mode \"spawn\": onionfront runs the anonymous services' tor "
        "itself, and an attached tor is a single-onion tor"),
    /* services[].probe */
    BAD(SVC(",'probe':{'port':81}"), "services[0].probe.port: must be one of the service's virtual ports"),
    BAD(SVC(",'probe':{'type':'ping'}"), "services[0].probe.type: must be one of \"http\", \"connect\", not \"ping\""),
    BAD(SVC(",'probe':{'path':'x'}"), "services[0].probe.path: must start with \"/\""),
    BAD(SVC(",'probe':{'expect_status':[99]}"), "services[0].probe.expect_status[0]: must be 100-599"),
    BAD(SVC(",'probe':{'type':'connect','path':'/'}"), "services[0].probe.path: only allowed for http probes"),
    BAD(SVC(",'probe':{'body_contains':''}"), "services[0].probe.body_contains: must be 1-256 bytes"),
};

static void test_bad_config(void **state)
{
    const struct bad_case *bc = *state;
    char err[1024] = "";
    struct config *cfg = load_sq(bc->json, err, sizeof err);
    if (cfg) {
        config_free(cfg);
        fail_msg("loaded, but should fail with: %s\n  config: %s", bc->err, bc->json);
    }
    if (strcmp(err, bc->err) != 0)
        fail_msg("wrong error\n  config:   %s\n  expected: %s\n  got:      %s", bc->json, bc->err, err);
}

/* ---- valid configs ------------------------------------------------------------------------------ */

/* Every default, from the smallest valid config. */
static void test_minimal_defaults(void **state)
{
    struct test_state *ts = *state;
    const struct config *c = ts->cfg = load_ok(ts, TOP(SVC1));

    assert_string_equal(c->state_dir, "/var/lib/of");
    assert_string_equal(c->run_dir, "/run/of");
    assert_int_equal(c->log_level, CONFIG_LOG_INFO);
    assert_int_equal(c->log_format, CONFIG_LOG_FORMAT_TEXT);
    assert_int_equal(c->tor.mode, TOR_MODE_SPAWN);
    assert_string_equal(c->tor.binary, "/usr/bin/tor");
    assert_string_equal(c->tor.control_socket, "/run/of/control/control.sock");
    assert_null(c->tor.user);
    assert_int_equal(c->tor.bootstrap_timeout, 300);
    assert_int_equal(c->tor.command_timeout, 30);
    assert_int_equal(c->tor.restart_backoff_max, 60);
    assert_int_equal(c->tor.instances, 1);
    assert_int_equal(c->tor.tors_per_service, 1);
    assert_int_equal(c->tor.drain_timeout, 120);
    assert_int_equal(c->tor.renewal, TOR_RENEWAL_POW);
    assert_int_equal(c->tor.n_extra_torrc, 0);
    assert_null(c->tor.extra_torrc);

    assert_int_equal(c->n_services, 1);
    const struct service_conf *s = &c->services[0];
    assert_string_equal(s->name, "web");
    assert_string_equal(s->key_dir, "/var/lib/of/keys/web");
    assert_int_equal(s->mode, SERVICE_MODE_SINGLE);
    assert_true(s->onion_location);
    assert_int_equal(config_count_mode(c, SERVICE_MODE_SINGLE), 1);
    assert_int_equal(config_count_mode(c, SERVICE_MODE_ANONYMOUS), 0);
    assert_int_equal(s->max_streams, 0);
    /* tor's own defaults: nothing different is sent to tor */
    assert_false(s->dos.pow_enabled);
    assert_int_equal(s->dos.pow_queue_rate, 250);
    assert_int_equal(s->dos.pow_queue_burst, 2500);
    assert_false(s->dos.intro_enabled);
    assert_int_equal(s->dos.intro_rate_per_sec, 25);
    assert_int_equal(s->dos.intro_burst_per_sec, 200);
    assert_false(s->dos.max_streams_close_circuit);
    assert_int_equal(s->dos.num_intro_points, 3);
    assert_null(config_first_pow_service(c));
    assert_int_equal(s->n_ports, 1);
    const struct port_conf *p = &s->ports[0];
    assert_int_equal(p->virtual_port, 80);
    assert_true(p->from_target);
    assert_int_equal(p->n_backends, 1);
    assert_string_equal(p->backends[0].name, "web-80-0");
    assert_int_equal(p->backends[0].weight, 1);
    assert_int_equal(p->backends[0].addr.kind, BACKEND_ADDR_INET);
    assert_int_equal(p->backends[0].addr.family, AF_INET);
    assert_string_equal(p->backends[0].addr.host, "127.0.0.1");
    assert_int_equal(p->backends[0].addr.port, 8080);
    assert_string_equal(p->backends[0].addr.text, "127.0.0.1:8080");
    assert_int_equal(p->balance, BALANCE_ROUND_ROBIN);
    assert_int_equal(p->connect_timeout_ms, 3000);
    assert_int_equal(p->max_streams_per_circuit, CONFIG_DEFAULT_MAX_STREAMS_PER_CIRCUIT);
    assert_int_equal(p->circuit_stream_rate, 0); /* off */
    assert_int_equal(p->circuit_stream_burst, 10);
    assert_int_equal(p->idle_timeout_s, 3600); /* CONFIG_DEFAULT_IDLE_TIMEOUT_S: finite, tunnel-like */
    assert_false(p->proxy_protocol);
    assert_int_equal(p->health.type, HEALTH_TCP);
    assert_int_equal(p->health.interval_ms, 2000);
    assert_int_equal(p->health.timeout_ms, 1000);
    assert_int_equal(p->health.rise, 2);
    assert_int_equal(p->health.fall, 3);
    assert_int_equal(p->health.method, HEALTH_METHOD_GET);
    assert_string_equal(p->health.path, "/");
    assert_string_equal(p->health.host, "");
    assert_int_equal(p->health.n_expect_status, 1);
    assert_int_equal(p->health.expect_status[0], 200);
    assert_string_equal(p->health.ca_file, "");
    assert_true(p->health.tls_verify);

    assert_string_equal(c->status.socket, "/run/of/status.sock");
    assert_int_equal(c->status.n_allowed_uids, 0);
    assert_int_equal(c->status.n_allowed_gids, 0);
    assert_int_equal(c->status.n_admin_uids, 0); /* only root and onionfront's own uid are admins */
    assert_int_equal(c->status.n_admin_gids, 0);
    assert_false(c->metrics.enabled);
    assert_int_equal(c->limits.max_open_streams, 0); /* auto */
    assert_int_equal(c->probe.hsfetch_interval, 300);
    assert_int_equal(c->probe.republish_deadline, 120);
    assert_false(c->onion_location.enabled);
    assert_null(c->onion_location.dir);
    assert_null(c->onion_location.on_change);
}

/* idle_timeout: finite by default (HAProxy's tunnel timeout, 1 h: long-polls and WebSockets keep going),
 * 0 still turns it off, the range's ends load. */
static void test_idle_timeout(void **state)
{
    struct test_state *ts = *state;
    static const struct {
        const char *json;
        unsigned want;
    } rows[] = {
        {PORT("'virtual':80,'target':'127.0.0.1:8080'"), CONFIG_DEFAULT_IDLE_TIMEOUT_S},
        {PORT("'virtual':80,'target':'127.0.0.1:8080','idle_timeout':0"), 0},
        {PORT("'virtual':80,'target':'127.0.0.1:8080','idle_timeout':1"), 1},
        {PORT("'virtual':80,'target':'127.0.0.1:8080','idle_timeout':86400"), 86400},
    };
    assert_int_equal(CONFIG_DEFAULT_IDLE_TIMEOUT_S, 3600);
    for (size_t i = 0; i < ARRAY_LEN(rows); i++) {
        struct config *c = load_ok(ts, rows[i].json);
        assert_int_equal(c->services[0].ports[0].idle_timeout_s, rows[i].want);
        config_free(c);
    }
}

/* A port's "tls" marker: off by default; on, the probe targets the first tls port over https (type http)
 * unless probe.port says otherwise; a port's marker counts as a difference on reload. */
static void test_tls_port(void **state)
{
    struct test_state *ts = *state;
    struct config *c = load_ok(ts, PORT("'virtual':80,'target':'127.0.0.1:8080'"));
    assert_false(c->services[0].ports[0].tls);
    config_free(c);
    c = load_ok(ts, SERVICES("{'name':'web','ports':[{'virtual':80,'target':'127.0.0.1:8080'},"
                             "{'virtual':443,'target':'127.0.0.1:8443','tls':true}]}"));
    const struct service_conf *s = &c->services[0];
    assert_true(service_conf_find_port(s, 443)->tls);
    assert_false(service_conf_find_port(s, 80)->tls);
    assert_int_equal(s->probe.port, 443);
    assert_int_equal(s->probe.type, PROBE_TARGET_HTTP);
    struct config *c2 = load_ok(ts, SERVICES("{'name':'web','ports':[{'virtual':80,'target':'127.0.0.1:8080'},"
                                             "{'virtual':443,'target':'127.0.0.1:8443'}]}"));
    assert_int_equal(c2->services[0].probe.port, 80);
    assert_false(port_conf_equal(service_conf_find_port(s, 443), service_conf_find_port(&c2->services[0], 443)));
    config_free(c2);
    config_free(c);
    c = load_ok(ts, SERVICES("{'name':'web','ports':[{'virtual':8443,'target':'127.0.0.1:8443','tls':true}],"
                             "'probe':{'port':8443,'type':'connect'}}"));
    assert_int_equal(c->services[0].probe.type, PROBE_TARGET_CONNECT);
    config_free(c);
    char err[256];
    assert_null(load_sq(PORT("'virtual':443,'target':'127.0.0.1:8443','tls':'yes'"), err, sizeof(err)));
    assert_string_equal(err, P0 ".tls: must be true or false, not \"yes\"");
}

/* Every field set to a value other than its default. */
static void test_full_config(void **state)
{
    struct test_state *ts = *state;
    const struct config *c = ts->cfg = load_ok(ts,
        "{'state_dir':'/srv/of//','run_dir':'/run/of/','log_level':'debug','log_format':'json',"
        "'tor':{'mode':'spawn','binary':'/opt/tor/bin/tor','user':'debian-tor','bootstrap_timeout':60,"
        "  'command_timeout':5,'restart_backoff_max':10,"
        "  'extra_torrc':['TestingTorNetwork 1','DirAuthority a orport=5000 127.0.0.1:7000 AAAA',"
        "                 '  Log info stderr','DataDirectoryGroupReadable 1','_HSLayer2Nodes x','l notice stdout']},"
        "'services':[{'name':'shop','key_dir':'/etc/of/keys/shop','max_streams':100,'ports':["
        "  {'virtual':443,'backends':[{'name':'app1','address':'[::1]:8443','weight':3},"
        "                             {'address':'unix:/run/app2.sock','weight':0}],"
        "   'balance':'circuit','connect_timeout_ms':500,'max_streams_per_circuit':8,'proxy_protocol':true,"
        "   'circuit_stream_rate':20,'idle_timeout':300,"
        "   'health':{'type':'https','interval_ms':5000,'timeout_ms':4999,'rise':1,'fall':100,'method':'HEAD',"
        "             'path':'/health?full=1','host':'shop.example','expect_status':[204,200,301],"
        "             'tls_verify':false}},"
        "  {'virtual':80,'target':'/run/redirect.sock','health':{'type':'none'}}]},"
        " {'name':'api','ports':[{'virtual':8080,'target':'api.internal:9000','balance':'least_conn'}],"
        "  'dos':{'pow':{'enabled':true,'queue_rate':0,'queue_burst':0},"
        "         'intro':{'enabled':true,'rate_per_sec':2147483647,'burst_per_sec':2147483647},"
        "         'max_streams':20,'max_streams_close_circuit':true,'num_intro_points':20}}],"
        "'status':{'socket':'/run/of/st.sock','allowed_uids':[0,1000],'allowed_gids':[4294967294],"
        "          'admin_uids':[1500],'admin_gids':[27,28]},"
        "'metrics':{'listen':'127.0.0.2:9464'},"
        "'limits':{'max_open_streams':5000},"
        "'probe':{'hsfetch_interval':10,'republish_deadline':3600},"
        "'onion_location':{'dir':'/etc/nginx/onionfront/','on_change':['/usr/sbin/nginx','-s','reload']}}");

    assert_string_equal(c->state_dir, "/srv/of");
    assert_string_equal(c->run_dir, "/run/of");
    assert_int_equal(c->log_level, CONFIG_LOG_DEBUG);
    assert_int_equal(c->log_format, CONFIG_LOG_FORMAT_JSON);
    assert_string_equal(c->tor.binary, "/opt/tor/bin/tor");
    assert_string_equal(c->tor.user, "debian-tor");
    assert_string_equal(c->tor.control_socket, "/run/of/control/control.sock");
    assert_int_equal(c->tor.bootstrap_timeout, 60);
    assert_int_equal(c->tor.command_timeout, 5);
    assert_int_equal(c->tor.restart_backoff_max, 10);
    assert_int_equal(c->tor.n_extra_torrc, 6);
    assert_string_equal(c->tor.extra_torrc[1], "DirAuthority a orport=5000 127.0.0.1:7000 AAAA");
    assert_string_equal(c->tor.extra_torrc[2], "  Log info stderr");

    assert_int_equal(c->n_services, 2);
    const struct service_conf *s = &c->services[0];
    assert_string_equal(s->name, "shop");
    assert_string_equal(s->key_dir, "/etc/of/keys/shop");
    assert_int_equal(s->max_streams, 100);
    const struct service_conf *api = &c->services[1];
    assert_int_equal(api->max_streams, 20);
    assert_true(api->dos.pow_enabled);
    assert_int_equal(api->dos.pow_queue_rate, 0);
    assert_int_equal(api->dos.pow_queue_burst, 0);
    assert_true(api->dos.intro_enabled);
    assert_int_equal(api->dos.intro_rate_per_sec, 2147483647u);
    assert_int_equal(api->dos.intro_burst_per_sec, 2147483647u);
    assert_true(api->dos.max_streams_close_circuit);
    assert_int_equal(api->dos.num_intro_points, 20);
    assert_ptr_equal(config_first_pow_service(c), api);
    assert_int_equal(s->n_ports, 2);
    const struct port_conf *p = &s->ports[0];
    assert_int_equal(p->virtual_port, 443);
    assert_false(p->from_target);
    assert_int_equal(p->n_backends, 2);
    assert_string_equal(p->backends[0].name, "app1");
    assert_int_equal(p->backends[0].addr.kind, BACKEND_ADDR_INET);
    assert_int_equal(p->backends[0].addr.family, AF_INET6);
    assert_string_equal(p->backends[0].addr.host, "::1");
    assert_int_equal(p->backends[0].addr.port, 8443);
    assert_int_equal(p->backends[0].weight, 3);
    assert_string_equal(p->backends[1].name, "shop-443-1");
    assert_int_equal(p->backends[1].addr.kind, BACKEND_ADDR_UNIX);
    assert_string_equal(p->backends[1].addr.path, "/run/app2.sock");
    assert_string_equal(p->backends[1].addr.text, "unix:/run/app2.sock");
    assert_int_equal(p->backends[1].weight, 0);
    assert_int_equal(p->balance, BALANCE_CIRCUIT);
    assert_int_equal(p->connect_timeout_ms, 500);
    assert_int_equal(p->max_streams_per_circuit, 8);
    assert_int_equal(p->circuit_stream_rate, 20);
    assert_int_equal(p->circuit_stream_burst, 40); /* 2 x rate */
    assert_int_equal(p->idle_timeout_s, 300);
    assert_true(p->proxy_protocol);
    assert_int_equal(p->health.type, HEALTH_HTTPS);
    assert_int_equal(p->health.interval_ms, 5000);
    assert_int_equal(p->health.timeout_ms, 4999);
    assert_int_equal(p->health.rise, 1);
    assert_int_equal(p->health.fall, 100);
    assert_int_equal(p->health.method, HEALTH_METHOD_HEAD);
    assert_string_equal(p->health.path, "/health?full=1");
    assert_string_equal(p->health.host, "shop.example");
    assert_int_equal(p->health.n_expect_status, 3);
    assert_int_equal(p->health.expect_status[0], 204);
    assert_int_equal(p->health.expect_status[2], 301);
    assert_false(p->health.tls_verify);
    assert_string_equal(p->health.ca_file, "");
    p = &s->ports[1];
    assert_int_equal(p->virtual_port, 80);
    assert_true(p->from_target);
    assert_string_equal(p->backends[0].name, "shop-80-0");
    assert_string_equal(p->backends[0].addr.path, "/run/redirect.sock");
    assert_int_equal(p->health.type, HEALTH_NONE);
    s = &c->services[1];
    assert_string_equal(s->key_dir, "/srv/of/keys/api");
    assert_string_equal(s->ports[0].backends[0].addr.host, "api.internal");
    assert_int_equal(s->ports[0].backends[0].addr.family, AF_UNSPEC);
    assert_int_equal(s->ports[0].backends[0].addr.port, 9000);
    assert_int_equal(s->ports[0].balance, BALANCE_LEAST_CONN);

    assert_string_equal(c->status.socket, "/run/of/st.sock");
    assert_int_equal(c->status.n_allowed_uids, 2);
    assert_int_equal(c->status.allowed_uids[1], 1000);
    assert_int_equal(c->status.n_allowed_gids, 1);
    assert_int_equal(c->status.allowed_gids[0], 4294967294U);
    assert_int_equal(c->status.n_admin_uids, 1);
    assert_int_equal(c->status.admin_uids[0], 1500);
    assert_int_equal(c->status.n_admin_gids, 2);
    assert_int_equal(c->status.admin_gids[1], 28);
    assert_true(c->metrics.enabled);
    assert_string_equal(c->metrics.listen, "127.0.0.2:9464");
    assert_string_equal(c->metrics.host, "127.0.0.2");
    assert_int_equal(c->metrics.family, AF_INET);
    assert_int_equal(c->metrics.port, 9464);
    assert_int_equal(c->limits.max_open_streams, 5000);
    assert_int_equal(c->probe.hsfetch_interval, 10);
    assert_int_equal(c->probe.republish_deadline, 3600);
    assert_true(c->onion_location.enabled);
    assert_string_equal(c->onion_location.dir, "/etc/nginx/onionfront");
    assert_int_equal(c->onion_location.n_on_change, 3);
    assert_string_equal(c->onion_location.on_change[0], "/usr/sbin/nginx");
    assert_string_equal(c->onion_location.on_change[2], "reload");
    assert_null(c->onion_location.on_change[3]);
}

static void test_attach_mode(void **state)
{
    struct test_state *ts = *state;
    const struct config *c = ts->cfg = load_ok(ts, ATTACH(",'command_timeout':2"));
    assert_int_equal(c->tor.mode, TOR_MODE_ATTACH);
    assert_string_equal(c->tor.control_socket, "/run/tor/control");
    assert_null(c->tor.binary);
    assert_null(c->tor.user);
    assert_int_equal(c->tor.command_timeout, 2);
    /* attach mode writes no torrc: state_dir may hold a space */
    config_free(ts->cfg);
    c = ts->cfg = load_ok(ts, "{'state_dir':'/var/lib/my of','run_dir':'/run/of',"
                              "'tor':{'mode':'attach','control_socket':'/run/tor/control'}," SVC1 "}");
    assert_string_equal(c->state_dir, "/var/lib/my of");
}

/* Valid address forms -> parsed form. */
struct addr_case {
    const char *text;
    enum backend_addr_kind kind;
    int family;
    const char *host; /* or path */
    unsigned port;
};

static const struct addr_case addr_cases[] = {
    {"127.0.0.1:8080", BACKEND_ADDR_INET, AF_INET, "127.0.0.1", 8080},
    {"127.0.0.1:00080", BACKEND_ADDR_INET, AF_INET, "127.0.0.1", 80},
    {"10.1.2.3:65535", BACKEND_ADDR_INET, AF_INET, "10.1.2.3", 65535},
    {"[::1]:8080", BACKEND_ADDR_INET, AF_INET6, "::1", 8080},
    {"[0:0:0:0:0:0:0:1]:1", BACKEND_ADDR_INET, AF_INET6, "::1", 1},
    {"[FE80::A]:443", BACKEND_ADDR_INET, AF_INET6, "fe80::a", 443},
    {"[::ffff:10.0.0.1]:80", BACKEND_ADDR_INET, AF_INET6, "::ffff:10.0.0.1", 80},
    {"localhost:80", BACKEND_ADDR_INET, AF_UNSPEC, "localhost", 80},
    {"Backend-1.Internal:8080", BACKEND_ADDR_INET, AF_UNSPEC, "Backend-1.Internal", 8080},
    {"my_app:3000", BACKEND_ADDR_INET, AF_UNSPEC, "my_app", 3000},
    {"1.2.3.4.example:80", BACKEND_ADDR_INET, AF_UNSPEC, "1.2.3.4.example", 80},
    {"/run/web.sock", BACKEND_ADDR_UNIX, AF_UNIX, "/run/web.sock", 0},
    {"unix:/run/web.sock", BACKEND_ADDR_UNIX, AF_UNIX, "/run/web.sock", 0},
    {"unix:/run//php/fpm.sock/", BACKEND_ADDR_UNIX, AF_UNIX, "/run/php/fpm.sock", 0},
    {"/run/with space:and colon", BACKEND_ADDR_UNIX, AF_UNIX, "/run/with space:and colon", 0},
};

static void test_addresses(void **state)
{
    struct test_state *ts = *state;
    for (size_t i = 0; i < ARRAY_LEN(addr_cases); i++) {
        const struct addr_case *ac = &addr_cases[i];
        char json[512];
        snprintf(json, sizeof json, BACKENDS("{'address':'%s'}"), ac->text);
        struct config *c = load_ok(ts, json);
        const struct backend_addr *a = &c->services[0].ports[0].backends[0].addr;
        char got[700];
        snprintf(got, sizeof got, "%s %d %s %u %s", backend_addr_kind_str(a->kind), a->family,
                 a->kind == BACKEND_ADDR_UNIX ? a->path : a->host, (unsigned)a->port, a->text);
        char want[700];
        snprintf(want, sizeof want, "%s %d %s %u %s", backend_addr_kind_str(ac->kind), ac->family, ac->host,
                 ac->port, ac->text);
        config_free(c);
        assert_string_equal(got, want);
    }
}

static void test_metrics_loopback(void **state)
{
    struct test_state *ts = *state;
    static const struct {
        const char *listen;
        int family;
        const char *host;
        unsigned port;
    } ok[] = {
        {"127.0.0.1:9464", AF_INET, "127.0.0.1", 9464},
        {"127.255.255.254:1", AF_INET, "127.255.255.254", 1},
        {"[::1]:9464", AF_INET6, "::1", 9464},
        {"[0::1]:65535", AF_INET6, "::1", 65535},
    };
    for (size_t i = 0; i < ARRAY_LEN(ok); i++) {
        char json[512];
        snprintf(json, sizeof json, LISTEN("%s"), ok[i].listen);
        struct config *c = load_ok(ts, json);
        bool good = c->metrics.enabled && c->metrics.family == ok[i].family &&
                    strcmp(c->metrics.host, ok[i].host) == 0 && c->metrics.port == ok[i].port &&
                    strcmp(c->metrics.listen, ok[i].listen) == 0;
        config_free(c);
        if (!good)
            fail_msg("metrics.listen %s parsed wrongly", ok[i].listen);
    }
    ts->cfg = load_ok(ts, METRICS("'listen':null"));
    assert_false(ts->cfg->metrics.enabled);
    config_free(ts->cfg);
    ts->cfg = load_ok(ts, METRICS(""));
    assert_false(ts->cfg->metrics.enabled);
}

static void test_onion_location_no_command(void **state)
{
    struct test_state *ts = *state;
    const struct config *c = ts->cfg = load_ok(ts, OLOC("'dir':'/etc/nginx/of','on_change':[]"));
    assert_true(c->onion_location.enabled);
    assert_string_equal(c->onion_location.dir, "/etc/nginx/of");
    assert_null(c->onion_location.on_change);
    assert_int_equal(c->onion_location.n_on_change, 0);
}

/* onion_location.allow: the loopback default only for a loopback listen address, given entries kept in
 * canonical form, nothing without listen. */
static void test_onion_location_allow(void **state)
{
    struct test_state *ts = *state;
    static const struct {
        const char *members, *allow; /* allow: the entries' texts joined by " " */
    } rows[] = {
        {"'dir':'/d'", ""},
        {"'dir':'/d','listen':null", ""},
        {"'dir':'/d','listen':'127.0.0.1:8081'", "127.0.0.0/8"},
        {"'dir':'/d','listen':'127.0.0.2:8081'", "127.0.0.0/8"},
        {"'dir':'/d','listen':'[::1]:8081'", "::1/128"},
        {"'dir':'/d','listen':'127.0.0.1:8081','allow':['127.0.0.1']", "127.0.0.1/32"},
        {"'dir':'/d','listen':'10.0.0.5:8081','allow':['10.0.0.0/24','192.0.2.7']", "10.0.0.0/24 192.0.2.7/32"},
        {"'dir':'/d','listen':'0.0.0.0:8081','allow':['0.0.0.0/0']", "0.0.0.0/0"},
        {"'dir':'/d','listen':'[fd00::5]:8081','allow':['FD00::/64']", "fd00::/64"},
    };
    for (size_t i = 0; i < ARRAY_LEN(rows); i++) {
        char json[512], got[512] = "";
        snprintf(json, sizeof json, OLOC("%s"), rows[i].members);
        struct config *c = load_ok(ts, json);
        for (size_t k = 0; k < c->onion_location.n_allow; k++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", k ? " " : "", c->onion_location.allow[k].text);
        config_free(c);
        if (strcmp(got, rows[i].allow) != 0)
            fail_msg("%s: allow \"%s\", expected \"%s\"", rows[i].members, got, rows[i].allow);
    }
}

/* Paths are normalised; the root as state_dir gives "/keys/<name>", not "//keys/<name>". */
static void test_path_normalisation(void **state)
{
    struct test_state *ts = *state;
    const struct config *c = ts->cfg = load_ok(ts, "{'state_dir':'/','run_dir':'//run///of//'," SVC1 "}");
    assert_string_equal(c->state_dir, "/");
    assert_string_equal(c->run_dir, "/run/of");
    assert_string_equal(c->services[0].key_dir, "/keys/web");
    assert_string_equal(c->tor.control_socket, "/run/of/control/control.sock");
    assert_string_equal(c->status.socket, "/run/of/status.sock");
}

/* An "unknown key" must not be ignored even next to fields that are fine: a misspelt option is an error. */
static void test_unknown_key_with_valid_fields(void **state)
{
    struct test_state *ts = *state;
    struct config *c = load_sq(WITH("'metrics':{'listen':null},'metrics_off':0"), ts->err, sizeof ts->err);
    assert_null(c);
    assert_string_equal(ts->err, "metrics_off: unknown key; valid here: state_dir, run_dir, log_level, log_format, "
                                 "tor, services, status, metrics, limits, probe, onion_location");
}

/* Each enum value loads from its spelling and the stringer gives the spelling back. */
static void test_stringers_round_trip(void **state)
{
    struct test_state *ts = *state;
    static const char *const balances[] = {"round_robin", "least_conn", "circuit"};
    static const char *const types[] = {"tcp", "http", "https", "none"};
    static const char *const methods[] = {"GET", "HEAD", "OPTIONS"};
    static const char *const levels[] = {"debug", "info", "notice", "warn", "error"};
    char json[1024];

    for (size_t i = 0; i < ARRAY_LEN(balances); i++) {
        snprintf(json, sizeof json, PORT("'virtual':80,'target':'127.0.0.1:1','balance':'%s'"), balances[i]);
        struct config *c = load_ok(ts, json);
        const char *got = balance_policy_str(c->services[0].ports[0].balance);
        bool same = strcmp(got, balances[i]) == 0;
        config_free(c);
        assert_true(same);
    }
    for (size_t i = 0; i < ARRAY_LEN(types); i++) {
        snprintf(json, sizeof json, HEALTH("'type':'%s'"), types[i]);
        struct config *c = load_ok(ts, json);
        bool same = strcmp(health_type_str(c->services[0].ports[0].health.type), types[i]) == 0;
        config_free(c);
        assert_true(same);
    }
    for (size_t i = 0; i < ARRAY_LEN(methods); i++) {
        snprintf(json, sizeof json, HEALTH("'type':'http','method':'%s'"), methods[i]);
        struct config *c = load_ok(ts, json);
        bool same = strcmp(health_method_str(c->services[0].ports[0].health.method), methods[i]) == 0;
        config_free(c);
        assert_true(same);
    }
    for (size_t i = 0; i < ARRAY_LEN(levels); i++) {
        snprintf(json, sizeof json, WITH("'log_level':'%s'"), levels[i]);
        struct config *c = load_ok(ts, json);
        bool same = strcmp(config_log_level_str(c->log_level), levels[i]) == 0;
        config_free(c);
        assert_true(same);
    }
    static const char *const formats[] = {"text", "json"};
    for (size_t i = 0; i < ARRAY_LEN(formats); i++) {
        snprintf(json, sizeof json, WITH("'log_format':'%s'"), formats[i]);
        struct config *c = load_ok(ts, json);
        bool same = strcmp(config_log_format_str(c->log_format), formats[i]) == 0;
        config_free(c);
        assert_true(same);
    }
    struct config *c = load_ok(ts, ATTACH(""));
    bool same = strcmp(tor_mode_str(c->tor.mode), "attach") == 0;
    config_free(c);
    assert_true(same);
    c = load_ok(ts, TOR("'mode':'spawn'"));
    same = strcmp(tor_mode_str(c->tor.mode), "spawn") == 0;
    config_free(c);
    assert_true(same);
    c = load_ok(ts, TOR("'renewal':'readd'"));
    same = c->tor.renewal == TOR_RENEWAL_READD;
    config_free(c);
    assert_true(same);
    assert_string_equal(backend_addr_kind_str(BACKEND_ADDR_UNIX), "unix");
    assert_string_equal(service_mode_str(SERVICE_MODE_SINGLE), "single");
    assert_string_equal(service_mode_str(SERVICE_MODE_ANONYMOUS), "anonymous");
    assert_string_equal(balance_policy_str((enum balance_policy)99), "unknown");
}

/* ---- templates, files and syntax errors ----------------------------------------------------------- */

static void test_template_example(void **state)
{
    struct test_state *ts = *state;
    const struct config *c = ts->cfg = config_load_file("templates/onionfront.example.json", ts->err, sizeof ts->err);
    if (!c)
        fail_msg("templates/onionfront.example.json: %s", ts->err);
    assert_int_equal(c->n_services, 1);
    assert_int_equal(c->services[0].n_ports, 1);
    assert_int_equal(c->services[0].ports[0].n_backends, 1);
    assert_true(c->services[0].ports[0].from_target);
    assert_int_equal(c->tor.mode, TOR_MODE_SPAWN);
}

static void test_template_webfarm(void **state)
{
    struct test_state *ts = *state;
    const struct config *c = ts->cfg = config_load_file("templates/onionfront.webfarm.json", ts->err, sizeof ts->err);
    if (!c)
        fail_msg("templates/onionfront.webfarm.json: %s", ts->err);
    assert_int_equal(c->n_services, 1);
    const struct port_conf *p = &c->services[0].ports[0];
    assert_int_equal(p->n_backends, 3);
    assert_false(p->from_target);
    assert_int_equal(p->health.type, HEALTH_HTTP);
    assert_true(c->metrics.enabled);
    assert_non_null(c->status.socket);
}

static void test_file_errors(void **state)
{
    struct test_state *ts = *state;
    assert_null(config_load_file("tests/unit/no-such-config.json", ts->err, sizeof ts->err));
    assert_non_null(strstr(ts->err, "tests/unit/no-such-config.json"));

    /* A syntax error in a file carries line and column. */
    char path[] = "/tmp/test_config.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    static const char text[] = "{\n  \"state_dir\": \"/x\",\n  \"run_dir\": \"/r\"\n  \"services\": []\n}\n";
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    struct config *c = config_load_file(path, ts->err, sizeof ts->err);
    unlink(path);
    assert_null(c);
    assert_string_equal(ts->err, "line 4, column 12: '}' expected near '\"services\"'");
}

/* A small or absent error buffer never overflows. */
static void test_small_error_buffer(void **state)
{
    (void)state;
    char err[8];
    memset(err, 'x', sizeof err);
    assert_null(load_sq(WITH("'x':1"), err, 1));
    assert_int_equal(err[0], '\0');
    assert_int_equal(err[1], 'x');
    assert_null(load_sq(WITH("'tor':{'command_timeout':0}"), err, sizeof err));
    assert_string_equal(err, "tor.com");
    assert_null(load_sq("{", NULL, 0));
    assert_null(load_sq(WITH("'x':1"), NULL, 0));
}

/* ---- limits, built with jansson ------------------------------------------------------------------ */

/* A config with `n_services` services, the first with `n_ports` ports, its first port with `n_backends`. */
static struct config *load_sized(size_t n_services, size_t n_ports, size_t n_backends, char *err, size_t errlen)
{
    json_t *services = json_array();
    for (size_t i = 0; i < n_services; i++) {
        char name[32];
        snprintf(name, sizeof name, "s%zu", i);
        json_t *ports = json_array();
        for (size_t j = 0; j < (i == 0 ? n_ports : 1); j++) {
            json_t *backends = json_array();
            for (size_t k = 0; k < (j == 0 ? n_backends : 1); k++) {
                char addr[48];
                snprintf(addr, sizeof addr, "127.0.0.1:%zu", 1000 + k);
                json_array_append_new(backends, json_pack("{s:s}", "address", addr));
            }
            json_array_append_new(ports, json_pack("{s:I, s:o}", "virtual", (json_int_t)(j + 1), "backends", backends));
        }
        json_array_append_new(services, json_pack("{s:s, s:o}", "name", name, "ports", ports));
    }
    json_t *root = json_pack("{s:s, s:s, s:o}", "state_dir", "/var/lib/of", "run_dir", "/run/of", "services", services);
    assert_non_null(root);
    char *text = json_dumps(root, 0);
    json_decref(root);
    assert_non_null(text);
    struct config *c = config_load_string(text, strlen(text), err, errlen);
    free(text);
    return c;
}

static void test_limits(void **state)
{
    struct test_state *ts = *state;
    /* 512 services (issue 28: 500 on several tors), 64 ports, 64 backends */
    struct config *c = load_sized(512, 64, 64, ts->err, sizeof ts->err);
    if (!c)
        fail_msg("512/64/64 did not load: %s", ts->err);
    assert_int_equal(c->n_services, 512);
    assert_string_equal(c->services[511].name, "s511");
    assert_int_equal(c->services[0].n_ports, 64);
    assert_int_equal(c->services[0].ports[0].n_backends, 64);
    assert_string_equal(c->services[0].ports[0].backends[63].name, "s0-1-63");
    config_free(c);

    assert_null(load_sized(513, 1, 1, ts->err, sizeof ts->err));
    assert_string_equal(ts->err, "services: must have 1-512 entries");
    assert_null(load_sized(1, 65, 1, ts->err, sizeof ts->err));
    assert_string_equal(ts->err, "services[0].ports: must have 1-64 entries");
    assert_null(load_sized(1, 1, 65, ts->err, sizeof ts->err));
    assert_string_equal(ts->err, "services[0].ports[0].backends: must have 1-64 entries");

    /* extra_torrc: 1024 bytes are fine, 1025 are not */
    char line[1100];
    char json[1400];
    memset(line, 'x', sizeof line);
    memcpy(line, "Nickname ", 9);
    line[1024] = '\0';
    snprintf(json, sizeof json, TOR("'extra_torrc':['%s']"), line);
    c = load_ok(ts, json);
    config_free(c);
    line[1024] = 'x';
    line[1025] = '\0';
    snprintf(json, sizeof json, TOR("'extra_torrc':['%s']"), line);
    assert_null(load_sq(json, ts->err, sizeof ts->err));
    assert_string_equal(ts->err, "tor.extra_torrc[0]: must be at most 1024 bytes");

    /* a 253-byte host name is the longest; 254 is too long (labels of 63) */
    char host[300];
    memset(host, 'a', sizeof host);
    for (size_t i = 63; i < sizeof host; i += 64)
        host[i] = '.';
    host[253] = '\0';
    snprintf(json, sizeof json, TARGET("%s:80"), host);
    c = load_ok(ts, json);
    assert_string_equal(c->services[0].ports[0].backends[0].addr.host, host);
    config_free(c);
    host[253] = 'a';
    host[254] = '\0';
    snprintf(json, sizeof json, TARGET("%s:80"), host);
    assert_null(load_sq(json, ts->err, sizeof ts->err));
    assert_string_equal(ts->err, P0 ".target: host name must be at most 253 bytes");
    /* over 259 bytes is no address in any form */
    host[254] = 'a';
    host[260] = '\0';
    snprintf(json, sizeof json, TARGET("unix:/%s"), host + 6);
    assert_null(load_sq(json, ts->err, sizeof ts->err));
    assert_string_equal(ts->err, P0 ".target: must be at most 259 bytes");

    /* health.path up to 1024 bytes, health.host up to 255 */
    memset(line, 'p', sizeof line);
    line[0] = '/';
    line[1024] = '\0';
    snprintf(json, sizeof json, HEALTH("'type':'http','path':'%s'"), line);
    c = load_ok(ts, json);
    assert_int_equal(strlen(c->services[0].ports[0].health.path), 1024);
    config_free(c);
    line[1024] = 'p';
    line[1025] = '\0';
    snprintf(json, sizeof json, HEALTH("'type':'http','path':'%s'"), line);
    assert_null(load_sq(json, ts->err, sizeof ts->err));
    assert_string_equal(ts->err, H0 ".path: must be at most 1024 bytes");
    line[255] = '\0';
    snprintf(json, sizeof json, HEALTH("'type':'http','host':'%s'"), line + 1);
    c = load_ok(ts, json);
    config_free(c);
    line[256] = '\0';
    line[255] = 'h';
    snprintf(json, sizeof json, HEALTH("'type':'http','host':'%s'"), line);
    assert_null(load_sq(json, ts->err, sizeof ts->err));
    assert_string_equal(ts->err, H0 ".host: must be at most 255 bytes");

    /* lists of ids: at most 64 */
    json_t *uids = json_array();
    for (json_int_t i = 0; i < 65; i++)
        json_array_append_new(uids, json_integer(i));
    char *list = json_dumps(uids, 0);
    json_decref(uids);
    assert_non_null(list);
    snprintf(json, sizeof json, STATUS("'allowed_uids':%s"), list);
    free(list);
    assert_null(load_sq(json, ts->err, sizeof ts->err));
    assert_string_equal(ts->err, "status.allowed_uids: must have at most 64 entries");

    /* a 107-byte socket path is the longest that fits */
    char path[200];
    memset(path, 'a', sizeof path);
    path[0] = '/';
    path[107] = '\0';
    snprintf(json, sizeof json, TARGET("%s"), path);
    c = load_ok(ts, json);
    config_free(c);
    snprintf(json, sizeof json, ATTACH(",'bootstrap_timeout':10") "");
    c = load_ok(ts, json);
    config_free(c);
}

/* ---- health.ca_file: the loader looks at the file ------------------------------------------------ */

static void write_file(const char *path)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("-----BEGIN CERTIFICATE-----\n(not parsed by the loader)\n-----END CERTIFICATE-----\n", f);
    assert_int_equal(fclose(f), 0);
}

/* Load an https check with ca_file `path`: the config, or NULL with the message in ts->err. */
static struct config *load_ca_file(struct test_state *ts, const char *path)
{
    char json[2048];
    snprintf(json, sizeof json, HEALTH("'type':'https','ca_file':'%s'"), path);
    ts->err[0] = '\0';
    return load_sq(json, ts->err, sizeof ts->err);
}

/* ca_file `path` is refused with "<field path>: <why>", `why` built from the format and `path`. */
static void assert_ca_file_refused(struct test_state *ts, const char *path, const char *why_fmt)
{
    char why[1400], want[1500];
    struct config *c = load_ca_file(ts, path);
    if (c) {
        config_free(c);
        fail_msg("ca_file \"%s\" was accepted", path);
    }
    snprintf(why, sizeof why, why_fmt, path);
    snprintf(want, sizeof want, H0 ".ca_file: %s", why);
    assert_string_equal(ts->err, want);
}

static void test_ca_file(void **state)
{
    struct test_state *ts = *state;
    char ca[128], other[128], path[160];
    assert_int_equal(tmpdir_make(ts->dir, sizeof ts->dir, "test_config"), 0);
    snprintf(ca, sizeof ca, "%s/ca.pem", ts->dir);
    snprintf(other, sizeof other, "%s/other.pem", ts->dir);
    write_file(ca);
    write_file(other);

    /* accepted, normalised like every path; verification stays on */
    snprintf(path, sizeof path, "%s//ca.pem", ts->dir);
    ts->cfg = load_ca_file(ts, path);
    if (!ts->cfg)
        fail_msg("ca_file %s: %s", path, ts->err);
    const struct health_conf *h = &ts->cfg->services[0].ports[0].health;
    assert_string_equal(h->ca_file, ca);
    assert_true(h->tls_verify);

    /* another file is a change of the health settings (applied in place: tor sees no difference) */
    ts->cfg2 = load_ca_file(ts, other);
    assert_non_null(ts->cfg2);
    const struct service_conf *a = &ts->cfg->services[0], *b = &ts->cfg2->services[0];
    assert_false(health_conf_equal(&a->ports[0].health, &b->ports[0].health));
    assert_false(service_conf_equal(a, b));
    assert_true(service_conf_tor_equal(a, b));
    config_free(ts->cfg2);
    ts->cfg2 = load_ca_file(ts, ca);
    assert_non_null(ts->cfg2);
    assert_true(service_conf_equal(a, &ts->cfg2->services[0]));

    /* a link to a readable file is fine (libcurl follows it too) */
    snprintf(path, sizeof path, "%s/link.pem", ts->dir);
    assert_int_equal(symlink(ca, path), 0);
    struct config *c = load_ca_file(ts, path);
    if (!c)
        fail_msg("ca_file %s: %s", path, ts->err);
    config_free(c);

    /* refused: missing, a dangling link, a directory, a FIFO (refused before any open, which would block) */
    snprintf(path, sizeof path, "%s/missing.pem", ts->dir);
    assert_ca_file_refused(ts, path, "cannot read \"%s\": No such file or directory");
    snprintf(path, sizeof path, "%s/dangling.pem", ts->dir);
    assert_int_equal(symlink("missing.pem", path), 0);
    assert_ca_file_refused(ts, path, "cannot read \"%s\": No such file or directory");
    assert_ca_file_refused(ts, ts->dir, "\"%s\" is not a regular file");
    snprintf(path, sizeof path, "%s/fifo.pem", ts->dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    assert_ca_file_refused(ts, path, "\"%s\" is not a regular file");
    /* unreadable: only testable without root, which may read any file */
    if (geteuid() != 0) {
        snprintf(path, sizeof path, "%s/locked.pem", ts->dir);
        write_file(path);
        assert_int_equal(chmod(path, 0), 0);
        assert_ca_file_refused(ts, path, "cannot read \"%s\": Permission denied");
    }

    /* at most CONFIG_CA_FILE_MAX bytes: the longest through directories of 200-byte names */
    char longest[CONFIG_CA_FILE_MAX + 2];
    size_t n = (size_t)snprintf(longest, sizeof longest, "%s", ts->dir);
    while (CONFIG_CA_FILE_MAX - n > 201) {
        longest[n++] = '/';
        memset(longest + n, 'd', 200);
        n += 200;
        longest[n] = '\0';
        assert_int_equal(mkdir(longest, 0700), 0);
    }
    longest[n++] = '/';
    memset(longest + n, 'f', CONFIG_CA_FILE_MAX - n);
    longest[CONFIG_CA_FILE_MAX] = '\0';
    write_file(longest);
    c = load_ca_file(ts, longest);
    if (!c)
        fail_msg("the longest ca_file: %s", ts->err);
    assert_int_equal(strlen(c->services[0].ports[0].health.ca_file), CONFIG_CA_FILE_MAX);
    config_free(c);
    longest[CONFIG_CA_FILE_MAX] = 'f';
    longest[CONFIG_CA_FILE_MAX + 1] = '\0';
    assert_ca_file_refused(ts, longest, "must be at most 1024 bytes");
}

/* ---- lookups and comparisons ----------------------------------------------------------------------- */

static void test_find(void **state)
{
    struct test_state *ts = *state;
    const struct config *c = ts->cfg = load_ok(ts,
        SERVICES("{'name':'a','ports':[{'virtual':80,'target':'127.0.0.1:1'},{'virtual':443,'target':'127.0.0.1:2'}]},"
                 "{'name':'b','ports':[{'virtual':22,'target':'127.0.0.1:3'}]}"));
    assert_ptr_equal(config_find_service(c, "b"), &c->services[1]);
    assert_ptr_equal(config_find_service(c, "a"), &c->services[0]);
    assert_null(config_find_service(c, "c"));
    assert_null(config_find_service(c, "A"));
    assert_null(config_find_service(NULL, "a"));
    assert_ptr_equal(service_conf_find_port(&c->services[0], 443), &c->services[0].ports[1]);
    assert_null(service_conf_find_port(&c->services[0], 22));
}

struct equal_case {
    const char *a, *b; /* members of services[0] after "name":"web" */
    bool equal, tor_equal;
};

#define EQ_PORT1 "'ports':[{'virtual':80,'target':'127.0.0.1:8080'}]"

static const struct equal_case equal_cases[] = {
    {EQ_PORT1, EQ_PORT1, true, true},
    {EQ_PORT1, "'ports':[{'virtual':80,'target':'127.0.0.1:8081'}]", false, true},
    {EQ_PORT1, "'ports':[{'virtual':81,'target':'127.0.0.1:8080'}]", false, false},
    {EQ_PORT1, EQ_PORT1 ",'max_streams':10", false, false},
    {EQ_PORT1, EQ_PORT1 ",'key_dir':'/keys/web'", false, false},
    /* the mode is the tor's business (another tor), Onion-Location only onionfront's */
    {EQ_PORT1, EQ_PORT1 ",'mode':'anonymous'", false, false},
    {EQ_PORT1, EQ_PORT1 ",'mode':'single'", true, true},
    {EQ_PORT1, EQ_PORT1 ",'onion_location':false", false, true},
    {EQ_PORT1 ",'mode':'anonymous'", EQ_PORT1 ",'mode':'anonymous','onion_location':false", true, true},
    /* every dos setting is tor's business; the same values spelled out are no change */
    {EQ_PORT1, EQ_PORT1 ",'dos':{'pow':{'enabled':true}}", false, false},
    {EQ_PORT1, EQ_PORT1 ",'dos':{'pow':{'queue_rate':250,'queue_burst':2500},'num_intro_points':3}", true, true},
    {EQ_PORT1 ",'dos':{'pow':{'enabled':true}}", EQ_PORT1 ",'dos':{'pow':{'enabled':true,'queue_rate':251}}", false,
     false},
    {EQ_PORT1, EQ_PORT1 ",'dos':{'pow':{'queue_burst':2501}}", false, false},
    {EQ_PORT1, EQ_PORT1 ",'dos':{'intro':{'enabled':true}}", false, false},
    {EQ_PORT1, EQ_PORT1 ",'dos':{'intro':{'rate_per_sec':26}}", false, false},
    {EQ_PORT1, EQ_PORT1 ",'dos':{'intro':{'burst_per_sec':201}}", false, false},
    {EQ_PORT1, EQ_PORT1 ",'dos':{'num_intro_points':5}", false, false},
    {EQ_PORT1 ",'max_streams':4", EQ_PORT1 ",'dos':{'max_streams':4}", true, true},
    {EQ_PORT1 ",'max_streams':4", EQ_PORT1 ",'dos':{'max_streams':4,'max_streams_close_circuit':true}", false, false},
    {EQ_PORT1, "'ports':[{'virtual':80,'target':'127.0.0.1:8080'},{'virtual':81,'target':'127.0.0.1:8080'}]", false,
     false},
    /* a target is a pool of one with the default name and weight */
    {EQ_PORT1, "'ports':[{'virtual':80,'backends':[{'address':'127.0.0.1:8080'}]}]", true, true},
    {EQ_PORT1, "'ports':[{'virtual':80,'backends':[{'name':'web-80-0','address':'127.0.0.1:8080','weight':1}]}]",
     true, true},
    {EQ_PORT1, "'ports':[{'virtual':80,'backends':[{'address':'127.0.0.1:8080','weight':2}]}]", false, true},
    {EQ_PORT1, "'ports':[{'virtual':80,'backends':[{'name':'x','address':'127.0.0.1:8080'}]}]", false, true},
    {"'ports':[{'virtual':80,'target':'unix:/run/a.sock'}]", "'ports':[{'virtual':80,'target':'/run//a.sock'}]", true,
     true},
    {EQ_PORT1, "'ports':[{'virtual':80,'target':'127.0.0.1:8080','balance':'least_conn'}]", false, true},
    {EQ_PORT1, "'ports':[{'virtual':80,'target':'127.0.0.1:8080','proxy_protocol':true}]", false, true},
    {EQ_PORT1, "'ports':[{'virtual':80,'target':'127.0.0.1:8080','connect_timeout_ms':3001}]", false, true},
    {EQ_PORT1, "'ports':[{'virtual':80,'target':'127.0.0.1:8080','max_streams_per_circuit':1}]", false, true},
    {EQ_PORT1, "'ports':[{'virtual':80,'target':'127.0.0.1:8080','health':{'rise':3}}]", false, true},
    {EQ_PORT1, "'ports':[{'virtual':80,'target':'127.0.0.1:8080','health':{'type':'tcp','interval_ms':2000}}]", true,
     true},
    {"'ports':[{'virtual':80,'target':'127.0.0.1:1','health':{'type':'http','expect_status':[200,204]}}]",
     "'ports':[{'virtual':80,'target':'127.0.0.1:1','health':{'type':'http','expect_status':[204,200]}}]", true, true},
    {"'ports':[{'virtual':80,'target':'127.0.0.1:1','health':{'type':'http','expect_status':[200,204]}}]",
     "'ports':[{'virtual':80,'target':'127.0.0.1:1','health':{'type':'http','expect_status':[200,301]}}]", false, true},
    {"'ports':[{'virtual':80,'target':'127.0.0.1:1','health':{'type':'http'}}]",
     "'ports':[{'virtual':80,'target':'127.0.0.1:1','health':{'type':'http','path':'/x'}}]", false, true},
    {"'ports':[{'virtual':80,'target':'127.0.0.1:1','health':{'type':'https'}}]",
     "'ports':[{'virtual':80,'target':'127.0.0.1:1','health':{'type':'https','tls_verify':false}}]", false, true},
    {"'ports':[{'virtual':80,'target':'127.0.0.1:1','health':{'type':'https'}}]",
     "'ports':[{'virtual':80,'target':'127.0.0.1:1','health':{'type':'https','tls_verify':true}}]", true, true},
    /* reordering ports is no change; reordering backends is (it is the round-robin order) */
    {"'ports':[{'virtual':80,'target':'127.0.0.1:1'},{'virtual':443,'target':'127.0.0.1:2'}]",
     "'ports':[{'virtual':443,'target':'127.0.0.1:2'},{'virtual':80,'target':'127.0.0.1:1'}]", true, true},
    {"'ports':[{'virtual':80,'backends':[{'name':'a','address':'127.0.0.1:1'},{'name':'b','address':'127.0.0.1:2'}]}]",
     "'ports':[{'virtual':80,'backends':[{'name':'b','address':'127.0.0.1:2'},{'name':'a','address':'127.0.0.1:1'}]}]",
     false, true},
};

static void test_equal(void **state)
{
    struct test_state *ts = *state;
    for (size_t i = 0; i < ARRAY_LEN(equal_cases); i++) {
        const struct equal_case *ec = &equal_cases[i];
        char ja[1024], jb[1024];
        snprintf(ja, sizeof ja, SERVICES("{'name':'web',%s}"), ec->a);
        snprintf(jb, sizeof jb, SERVICES("{'name':'web',%s}"), ec->b);
        struct config *a = load_ok(ts, ja);
        struct config *b = load_ok(ts, jb);
        bool eq_ab = service_conf_equal(&a->services[0], &b->services[0]);
        bool eq_ba = service_conf_equal(&b->services[0], &a->services[0]);
        bool tor_ab = service_conf_tor_equal(&a->services[0], &b->services[0]);
        bool tor_ba = service_conf_tor_equal(&b->services[0], &a->services[0]);
        config_free(a);
        config_free(b);
        if (eq_ab != ec->equal || eq_ba != ec->equal || tor_ab != ec->tor_equal || tor_ba != ec->tor_equal)
            fail_msg("case %zu: equal %d/%d (want %d), tor_equal %d/%d (want %d)\n  a: %s\n  b: %s", i, eq_ab,
                     eq_ba, ec->equal, tor_ab, tor_ba, ec->tor_equal, ec->a, ec->b);
    }
}

static void test_port_equal_other_service(void **state)
{
    struct test_state *ts = *state;
    ts->cfg = load_ok(ts, SERVICES("{'name':'a','ports':[{'virtual':80,'target':'127.0.0.1:1'}]},"
                                   "{'name':'b','ports':[{'virtual':80,'target':'127.0.0.1:1'}]}"));
    /* same port settings but default backend names differ ("a-80-0" / "b-80-0") */
    assert_false(port_conf_equal(&ts->cfg->services[0].ports[0], &ts->cfg->services[1].ports[0]));
    assert_true(port_conf_equal(&ts->cfg->services[0].ports[0], &ts->cfg->services[0].ports[0]));
    assert_true(health_conf_equal(&ts->cfg->services[0].ports[0].health, &ts->cfg->services[1].ports[0].health));
    assert_false(service_conf_tor_equal(&ts->cfg->services[0], &ts->cfg->services[1]));
}

/* A reload: what needs a restart (config_restart_needed), and that everything else does not. */
struct restart_case {
    const char *a, *b;
    const char *want; /* NULL: can be applied */
};

#define RS_BASE TOR("'mode':'spawn','binary':'/usr/bin/tor'")

static const struct restart_case restart_cases[] = {
    {RS_BASE, RS_BASE, NULL},
    {RS_BASE, TOR("'mode':'spawn','binary':'/usr/bin/tor'"), NULL},
    {WITH("'log_level':'info'"), WITH("'log_level':'debug'"), NULL},
    {TOP(SVC1), SERVICES("{'name':'web'," PORTS1 "},{'name':'api','ports':[{'virtual':81,'target':'127.0.0.1:1'}]}"),
     NULL},
    {TOP(SVC1), "{'state_dir':'/var/lib/of2','run_dir':'/run/of'," SVC1 "}", "state_dir"},
    {TOP(SVC1), "{'state_dir':'/var/lib/of','run_dir':'/run/of2'," SVC1 "}", "run_dir"},
    {RS_BASE, TOR("'mode':'attach','control_socket':'/run/tor/control'"), "tor.mode"},
    /* a new tor.binary is a rolling restart (reload.c), not a restart of onionfront */
    {RS_BASE, TOR("'mode':'spawn','binary':'/usr/local/bin/tor'"), NULL},
    {TOR("'mode':'attach','control_socket':'/run/tor/control'"),
     TOR("'mode':'attach','control_socket':'/run/tor2/control'"), "tor.control_socket"},
    {RS_BASE, TOR("'mode':'spawn','binary':'/usr/bin/tor','user':'debian-tor'"), "tor.user"},
    {RS_BASE, TOR("'mode':'spawn','binary':'/usr/bin/tor','instances':2"), "tor.instances"},
    {TOR("'instances':3"), TOR("'instances':3,'tors_per_service':2"), "tor.tors_per_service"},
    {TOR("'instances':3,'tors_per_service':3"), TOR("'instances':3"), NULL}, /* the default is every tor */
    {TOP(SVC1), STATUS("'socket':'/run/x/status.sock'"), "status.socket"},
    {TOP(SVC1), METRICS("'listen':'127.0.0.1:9100'"), "metrics.listen"},
    {METRICS("'listen':'127.0.0.1:9100'"), METRICS("'listen':'127.0.0.1:9101'"), "metrics.listen"},
    {RS_BASE, TOR("'mode':'spawn','binary':'/usr/bin/tor','extra_torrc':['NumCPUs 1']"), "tor.extra_torrc"},
    {TOR("'extra_torrc':['NumCPUs 1']"), TOR("'extra_torrc':['NumCPUs 2']"), "tor.extra_torrc"},
};

static void test_restart_needed(void **state)
{
    struct test_state *ts = *state;
    for (size_t i = 0; i < ARRAY_LEN(restart_cases); i++) {
        const struct restart_case *rc = &restart_cases[i];
        struct config *a = load_ok(ts, rc->a);
        struct config *b = load_ok(ts, rc->b);
        const char *ab = config_restart_needed(a, b), *ba = config_restart_needed(b, a);
        bool ok = rc->want ? ab && ba && strcmp(ab, rc->want) == 0 && strcmp(ba, rc->want) == 0 : !ab && !ba;
        config_free(a);
        config_free(b);
        if (!ok)
            fail_msg("case %zu: got %s / %s, want %s\n  a: %s\n  b: %s", i, ab ? ab : "(none)", ba ? ba : "(none)",
                     rc->want ? rc->want : "(none)", rc->a, rc->b);
    }
}

/* An anonymous service beside a single one: its mode, Onion-Location off unless asked. */
static void test_service_modes(void **state)
{
    struct test_state *ts = *state;
    const struct config *c = ts->cfg = load_ok(
        ts, SERVICES("{'name':'web'," PORTS1 "},{'name':'hidden','mode':'anonymous'," PORTS1 "},"
                     "{'name':'hidden2','mode':'anonymous','onion_location':true," PORTS1 "},"
                     "{'name':'quiet','mode':'single','onion_location':false," PORTS1 "}"));
    assert_int_equal(c->services[0].mode, SERVICE_MODE_SINGLE);
    assert_true(c->services[0].onion_location);
    assert_int_equal(c->services[1].mode, SERVICE_MODE_ANONYMOUS);
    assert_false(c->services[1].onion_location);
    assert_string_equal(c->services[1].key_dir, "/var/lib/of/keys/hidden");
    assert_int_equal(c->services[2].mode, SERVICE_MODE_ANONYMOUS);
    assert_true(c->services[2].onion_location);
    assert_int_equal(c->services[3].mode, SERVICE_MODE_SINGLE);
    assert_false(c->services[3].onion_location);
    assert_int_equal(config_count_mode(c, SERVICE_MODE_SINGLE), 2);
    assert_int_equal(config_count_mode(c, SERVICE_MODE_ANONYMOUS), 2);
}

/* A private service (client_auth) is not advertised by Onion-Location: off by default (refused when asked
 * for: bad_cases); a public single onion beside it keeps the default. */
static void test_private_onion_location(void **state)
{
    struct test_state *ts = *state;
    const struct config *c = ts->cfg = load_ok(
        ts, SERVICES("{'name':'priv','client_auth':[" ALICE "]," PORTS1 "},"
                     "{'name':'priv2','client_auth':[" ALICE "],'onion_location':false," PORTS1 "},"
                     "{'name':'web'," PORTS1 "}"));
    assert_false(c->services[0].onion_location);
    assert_false(c->services[1].onion_location);
    assert_true(c->services[2].onion_location);
}

/* Leaf structs hold no pointers: a copy stays valid after the config is freed. */
static void test_leaf_copy(void **state)
{
    struct test_state *ts = *state;
    struct config *c = load_ok(ts, TARGET("[::1]:8080"));
    struct backend_conf copy = c->services[0].ports[0].backends[0];
    struct health_conf hcopy = c->services[0].ports[0].health;
    config_free(c);
    assert_string_equal(copy.addr.host, "::1");
    assert_string_equal(copy.name, "web-80-0");
    assert_string_equal(hcopy.path, "/");
}

/* Every error in one run (config_load_string_errors): a bad value or an unknown key is reported and the
 * parse goes on, each error with its field path and the bad value, in the file's order; a structural
 * error still ends it; the one-line form is the first error and how many more. */
static void test_every_error(void **state)
{
    (void)state;
    static const struct {
        const char *json;
        const char *errors; /* each followed by "|" */
    } cases[] = {
        {WITH("'log_level':'loud','tor':{'instances':9,'drain_timeout':'x'}"),
         "log_level: must be one of \"debug\", \"info\", \"notice\", \"warn\", \"error\", not \"loud\"|"
         "tor.instances: invalid value \"9\" (must be 1-4)|tor.drain_timeout: must be an integer, not \"x\"|"},
        /* two services, two ports each: every bad port */
        {SERVICES("{'name':'a','ports':[{'virtual':70000,'target':'127.0.0.1:1'},{'virtual':0,'target':'127.0.0.1:2'}]},"
                  "{'name':'b','ports':[{'virtual':80,'target':'127.0.0.1:3','proxy_protocol':'yes'}]}"),
         "services[0].ports[0].virtual: invalid port \"70000\" (must be 1-65535)|"
         "services[0].ports[1].virtual: invalid port \"0\" (must be 1-65535)|"
         "services[1].ports[0].proxy_protocol: must be true or false, not \"yes\"|"},
        /* unknown keys, near and not, at several places */
        {WITH("'metric':{},'limits':{'zzz':1,'max_open_streams':-1}"),
         "metric: unknown key; did you mean \"metrics\"?|"
         "limits.zzz: unknown key; valid here: max_open_streams|"
         "limits.max_open_streams: invalid value \"-1\" (must be 0-1000000)|"},
        /* a structural error ends the parse after the errors before it */
        {TOP("'log_format':'xml','services':{}"),
         "log_format: must be one of \"text\", \"json\", not \"xml\"|services: must be an array|"},
        /* JSON syntax: one error, with its cause */
        {"# onionfront\n{}", "line 1: '#' comments are not JSON (JSON has no comments): remove the comment|"},
    };
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
        char *json = sq(cases[i].json), got[4096] = "";
        struct config_errors errs = {0};
        struct config *cfg = config_load_string_errors(json, strlen(json), &errs);
        assert_null(cfg);
        for (size_t k = 0; k < errs.n; k++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s|", errs.msg[k]);
        if (strcmp(got, cases[i].errors) != 0)
            fail_msg("case %zu\n  want: %s\n  got:  %s", i, cases[i].errors, got);
        char one[512];
        config_errors_summary(&errs, one, sizeof one);
        size_t n = config_errors_count(&errs);
        if (n > 1 && !strstr(one, n == 2 ? "(and 1 more error: onionfront check-config lists them all)"
                                         : "more errors: onionfront check-config lists them all)"))
            fail_msg("case %zu: summary %s", i, one);
        config_errors_clear(&errs);
        free(json);
    }
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
    static const struct CMUnitTest tests[] = {
        T(test_minimal_defaults),
        T(test_idle_timeout),
        T(test_tls_port),
        T(test_full_config),
        T(test_attach_mode),
        T(test_addresses),
        T(test_metrics_loopback),
        T(test_onion_location_no_command),
        T(test_onion_location_allow),
        T(test_path_normalisation),
        T(test_unknown_key_with_valid_fields),
        T(test_stringers_round_trip),
        T(test_template_example),
        T(test_template_webfarm),
        T(test_file_errors),
        T(test_small_error_buffer),
        T(test_limits),
        T(test_ca_file),
        T(test_restart_needed),
        T(test_find),
        T(test_equal),
        T(test_port_equal_other_service),
        T(test_leaf_copy),
        T(test_service_modes),
        T(test_private_onion_location),
        T(test_every_error),
    };
    static struct CMUnitTest bad_tests[ARRAY_LEN(bad_cases)];
    for (size_t i = 0; i < ARRAY_LEN(bad_cases); i++)
        bad_tests[i] = (struct CMUnitTest){bad_cases[i].name, test_bad_config, NULL, NULL, (void *)&bad_cases[i]};

    int failed = cmocka_run_group_tests_name("config", tests, NULL, NULL);
    failed += _cmocka_run_group_tests("config_errors", bad_tests, ARRAY_LEN(bad_tests), NULL, NULL);
    return failed ? 1 : 0;
}
