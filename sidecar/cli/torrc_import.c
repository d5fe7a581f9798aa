/* torrc_import.c — an operator's torrc into onionfront's config (see torrc_import.h).
 *
 * tor's config syntax (tor's confline.c, parse_config_line_from_str_verbose): one option per line, the
 * name up to the first blank, then the value; '#' starts a comment outside quotes; a value in double
 * quotes takes C escapes; a line ending in '\' continues on the next, where comment lines are skipped;
 * option names are case-insensitive; a '+' before the name appends (the same for the options here), a
 * '/' clears. Every HiddenService* option but the two mode switches belongs to the last HiddenServiceDir
 * above it (tor's rend_config_service). */
#include "sidecar/cli/torrc_import.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define TORRC_NOTE_TEXT_MAX 160 /* how much of a line a note quotes */

/* What an option line does. */
enum torrc_opt_kind {
    TORRC_OPT_DIR,         /* HiddenServiceDir: a new service */
    TORRC_OPT_PORT,        /* HiddenServicePort VIRTUAL [TARGET] */
    TORRC_OPT_VERSION,     /* 3 is the only one tor runs */
    TORRC_OPT_UINT,        /* an integer field of the service */
    TORRC_OPT_BOOL,        /* 0 or 1, a boolean field of the service */
    TORRC_OPT_EXPORT_CIRC, /* HiddenServiceExportCircuitID: onionfront's proxy_protocol */
    TORRC_OPT_NON_ANON,    /* HiddenServiceNonAnonymousMode (global) */
    TORRC_OPT_SINGLE_HOP,  /* HiddenServiceSingleHopMode (global) */
    TORRC_OPT_SKIP,        /* understood, not carried over: `why` says so */
};

/* The options an import knows, with the config field each lands in (a dotted path in the service's
 * object) and onionfront's bounds (docs/configuration.md, services[] and services[].dos). */
static const struct torrc_opt {
    const char *name;
    enum torrc_opt_kind kind;
    const char *field;
    unsigned long min, max;
    const char *why;  /* TORRC_OPT_SKIP: why it is not carried over */
    bool per_service; /* belongs to the HiddenServiceDir above it */
} torrc_opts[] = {
    {"HiddenServiceDir", TORRC_OPT_DIR, NULL, 0, 0, NULL, false},
    {"HiddenServicePort", TORRC_OPT_PORT, NULL, 0, 0, NULL, true},
    {"HiddenServiceVersion", TORRC_OPT_VERSION, NULL, 0, 0, NULL, true},
    {"HiddenServiceNumIntroductionPoints", TORRC_OPT_UINT, "dos.num_intro_points", 1, 20, NULL, true},
    {"HiddenServiceMaxStreams", TORRC_OPT_UINT, "max_streams", 0, 65535, NULL, true},
    {"HiddenServiceMaxStreamsCloseCircuit", TORRC_OPT_BOOL, "dos.max_streams_close_circuit", 0, 1, NULL, true},
    {"HiddenServicePoWDefensesEnabled", TORRC_OPT_BOOL, "dos.pow.enabled", 0, 1, NULL, true},
    {"HiddenServicePoWQueueRate", TORRC_OPT_UINT, "dos.pow.queue_rate", 0, 2147483647, NULL, true},
    {"HiddenServicePoWQueueBurst", TORRC_OPT_UINT, "dos.pow.queue_burst", 0, 2147483647, NULL, true},
    {"HiddenServiceEnableIntroDoSDefense", TORRC_OPT_BOOL, "dos.intro.enabled", 0, 1, NULL, true},
    {"HiddenServiceEnableIntroDoSRatePerSec", TORRC_OPT_UINT, "dos.intro.rate_per_sec", 1, 2147483647, NULL, true},
    {"HiddenServiceEnableIntroDoSBurstPerSec", TORRC_OPT_UINT, "dos.intro.burst_per_sec", 1, 2147483647, NULL,
     true},
    {"HiddenServiceExportCircuitID", TORRC_OPT_EXPORT_CIRC, NULL, 0, 0, NULL, true},
    {"HiddenServiceAllowUnknownPorts", TORRC_OPT_SKIP, NULL, 0, 0,
     "not carried over: onionfront's tor gets only the config's ports", true},
    {"HiddenServiceDirGroupReadable", TORRC_OPT_SKIP, NULL, 0, 0,
     "not carried over: onionfront keeps key directories private (0700)", true},
    {"HiddenServiceOnionBalanceInstance", TORRC_OPT_SKIP, NULL, 0, 0,
     "not carried over: set services[].onionbalance.master_address by hand (the master address is in the "
     "directory's ob_config)", true},
    {"HiddenServiceAuthorizeClient", TORRC_OPT_SKIP, NULL, 0, 0,
     "v2 client authorization, which tor no longer runs; v3 clients are the files in authorized_clients/", true},
    {"HiddenServiceNonAnonymousMode", TORRC_OPT_NON_ANON, NULL, 0, 1, NULL, false},
    {"HiddenServiceSingleHopMode", TORRC_OPT_SINGLE_HOP, NULL, 0, 1, NULL, false},
    {"SocksPort", TORRC_OPT_SKIP, NULL, 0, 0,
     "not carried over: onionfront's single onion tor has no SocksPort (tor refuses one in that mode)", false},
    {"ControlPort", TORRC_OPT_SKIP, NULL, 0, 0, "not carried over: onionfront's tor has a control socket of its own",
     false},
    {"ControlSocket", TORRC_OPT_SKIP, NULL, 0, 0,
     "not carried over: onionfront's tor has a control socket of its own", false},
    {"CookieAuthentication", TORRC_OPT_SKIP, NULL, 0, 0, "not carried over: onionfront sets it", false},
    {"DataDirectory", TORRC_OPT_SKIP, NULL, 0, 0,
     "not carried over: onionfront's tor keeps its data in <state_dir>/tor", false},
    {"User", TORRC_OPT_SKIP, NULL, 0, 0, "not carried over: see tor.user in onionfront.json(5)", false},
    {"RunAsDaemon", TORRC_OPT_SKIP, NULL, 0, 0, "not carried over: onionfront supervises its tor", false},
    {"Log", TORRC_OPT_SKIP, NULL, 0, 0, "not carried over: onionfront logs its tor's lines with its own", false},
};
#define TORRC_N_OPTS (sizeof(torrc_opts) / sizeof(torrc_opts[0]))

struct torrc_service {
    char *dir;                    /* as written, trailing '/' removed */
    char name[TORRC_IMPORT_NAME_MAX + 1];
    unsigned line;                /* of its HiddenServiceDir */
    json_t *fields;               /* the service's config fields set by options (dotted paths resolved) */
    json_t *ports;                /* "<virtual>" -> [targets], in the torrc's order */
    bool proxy_protocol;          /* HiddenServiceExportCircuitID haproxy */
    bool v2;                      /* HiddenServiceVersion 2 */
    bool carried;                 /* in the config (has a port, is v3) */
};

struct torrc_import {
    struct torrc_service *svcs;
    size_t n_svcs, cap_svcs;
    size_t *carried; /* indexes into svcs of the carried services */
    size_t n_carried;
    char **notes;
    size_t n_notes, cap_notes;
    int non_anon, single_hop; /* the last value read, 0 if never */
    bool oom;
};

static void torrc_note(struct torrc_import *t, unsigned line, const char *text, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Add "line N: <text>: <why>" to the notes; `text` is outside input: control characters become '?'. */
static void torrc_note(struct torrc_import *t, unsigned line, const char *text, const char *fmt, ...)
{
    char shown[TORRC_NOTE_TEXT_MAX + 4], why[512];
    size_t n = 0;
    for (; text[n] && n < TORRC_NOTE_TEXT_MAX; n++)
        shown[n] = (unsigned char)text[n] < 0x20 || text[n] == 0x7f ? '?' : text[n];
    if (text[n])
        memcpy(shown + n, "...", 3), n += 3;
    shown[n] = '\0';
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    if (t->n_notes == t->cap_notes) {
        size_t cap = t->cap_notes ? 2 * t->cap_notes : 16;
        char **p = realloc(t->notes, cap * sizeof(*p));
        if (!p) {
            t->oom = true;
            return;
        }
        t->notes = p;
        t->cap_notes = cap;
    }
    size_t len = strlen(shown) + strlen(why) + 32;
    char *s = malloc(len);
    if (!s) {
        t->oom = true;
        return;
    }
    snprintf(s, len, "line %u: %s: %s", line, shown, why);
    t->notes[t->n_notes++] = s;
}

static const struct torrc_opt *torrc_opt_find(const char *name)
{
    for (size_t i = 0; i < TORRC_N_OPTS; i++)
        if (strcasecmp(name, torrc_opts[i].name) == 0)
            return &torrc_opts[i];
    return NULL;
}

/* Set the dotted `path` ("dos.pow.enabled") in `obj` to `v` (stolen), making the objects on the way. */
static int torrc_set_path(json_t *obj, const char *path, json_t *v)
{
    char part[64];
    const char *dot;
    while ((dot = strchr(path, '.'))) {
        snprintf(part, sizeof(part), "%.*s", (int)(dot - path), path);
        json_t *sub = json_object_get(obj, part);
        if (!sub) {
            if (!(sub = json_object()) || json_object_set_new(obj, part, sub) < 0) {
                json_decref(v);
                return -1;
            }
        }
        obj = sub;
        path = dot + 1;
    }
    return json_object_set_new(obj, path, v);
}

/* A decimal number of at most 10 digits, no sign: tor's integers here. */
static int torrc_parse_uint(const char *s, unsigned long *out)
{
    size_t n = strlen(s);
    if (n == 0 || n > 10 || strspn(s, "0123456789") != n)
        return -1;
    *out = strtoul(s, NULL, 10);
    return 0;
}

void torrc_import_make_name(const char *from, char out[TORRC_IMPORT_NAME_MAX + 1])
{
    size_t n = 0;
    for (const char *p = from; *p && n < TORRC_IMPORT_NAME_MAX; p++) {
        char c = (char)tolower((unsigned char)*p);
        bool alnum = isdigit((unsigned char)c) || (c >= 'a' && c <= 'z');
        if (n == 0 && !alnum)
            continue; /* a name starts with a letter or digit */
        out[n++] = alnum || c == '_' || c == '-' ? c : '-';
    }
    out[n] = '\0';
    if (n == 0)
        snprintf(out, TORRC_IMPORT_NAME_MAX + 1, "service");
}

/* A service name from the directory's last component (torrc_import_make_name), unique among the
 * services before it. */
static void torrc_service_name(struct torrc_import *t, struct torrc_service *s)
{
    const char *base = strrchr(s->dir, '/');
    char name[TORRC_IMPORT_NAME_MAX + 1];
    torrc_import_make_name(base ? base + 1 : s->dir, name);
    snprintf(s->name, sizeof(s->name), "%s", name);
    for (unsigned k = 2;; k++) {
        bool taken = false;
        for (size_t i = 0; i < t->n_carried && !taken; i++)
            taken = strcmp(t->svcs[t->carried[i]].name, s->name) == 0;
        if (!taken)
            return;
        char suffix[16];
        int sl = snprintf(suffix, sizeof(suffix), "-%u", k);
        snprintf(s->name, sizeof(s->name), "%.*s%s", (int)(TORRC_IMPORT_NAME_MAX - (size_t)sl), name, suffix);
    }
}

/* HiddenServicePort VIRTUAL [TARGET]: tor's forms of TARGET are PORT, ADDR, ADDR:PORT, [V6]:PORT and
 * unix:PATH; a missing port is VIRTUAL's, a missing address 127.0.0.1 (tor's rend_service_parse_port_config). */
static void torrc_port(struct torrc_import *t, struct torrc_service *s, unsigned line, const char *raw,
                       const char *val)
{
    char virt[16], target[512];
    unsigned long v, tp;
    size_t vl = strcspn(val, " \t");
    const char *sp = val + vl + strspn(val + vl, " \t");
    snprintf(virt, sizeof(virt), "%.*s", (int)(vl < 15 ? vl : 15), val);
    if (vl > 10 || torrc_parse_uint(virt, &v) < 0 || v < 1 || v > 65535) {
        torrc_note(t, line, raw, "not carried over: the virtual port must be 1-65535");
        return;
    }
    if (strpbrk(sp, " \t") || strlen(sp) > 300) {
        torrc_note(t, line, raw, "not carried over: not a port and one target");
        return;
    }
    if (!*sp)
        snprintf(target, sizeof(target), "127.0.0.1:%lu", v);
    else if (strncmp(sp, "unix:", 5) == 0 || strstr(sp, "]:") || (sp[0] != '[' && strchr(sp, ':')))
        snprintf(target, sizeof(target), "%s", sp);
    else if (torrc_parse_uint(sp, &tp) == 0)
        snprintf(target, sizeof(target), "127.0.0.1:%s", sp);
    else /* an address without a port: VIRTUAL's */
        snprintf(target, sizeof(target), "%s:%lu", sp, v);
    json_t *list = json_object_get(s->ports, virt);
    if (!list && (!(list = json_array()) || json_object_set_new(s->ports, virt, list) < 0)) {
        t->oom = true;
        return;
    }
    json_t *js = json_string(target);
    if (!js) { /* jansson takes UTF-8 only */
        torrc_note(t, line, raw, "not carried over: the target is not UTF-8 text");
        return;
    }
    if (json_array_append_new(list, js) < 0)
        t->oom = true;
}

static struct torrc_service *torrc_new_service(struct torrc_import *t, unsigned line, const char *dir)
{
    if (t->n_svcs == t->cap_svcs) {
        size_t cap = t->cap_svcs ? 2 * t->cap_svcs : 8;
        struct torrc_service *p = realloc(t->svcs, cap * sizeof(*p));
        size_t *c = realloc(t->carried, cap * sizeof(*c));
        if (p)
            t->svcs = p;
        if (c)
            t->carried = c;
        if (!p || !c) {
            t->oom = true;
            return NULL;
        }
        t->cap_svcs = cap;
    }
    struct torrc_service *s = &t->svcs[t->n_svcs];
    memset(s, 0, sizeof(*s));
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    s->dir = strndup(dir, n);
    s->fields = json_object();
    s->ports = json_object();
    s->line = line;
    t->n_svcs++;
    if (!s->dir || !s->fields || !s->ports)
        t->oom = true;
    return s;
}

/* Close the service `s`: carried over if it is a v3 service with at least one port. */
static void torrc_end_service(struct torrc_import *t, struct torrc_service *s)
{
    if (!s)
        return;
    if (s->v2 || json_object_size(s->ports) == 0) {
        torrc_note(t, s->line, s->dir,
                   s->v2 ? "HiddenServiceDir of a v2 service (HiddenServiceVersion 2), which tor no longer runs: "
                           "not carried over"
                         : "HiddenServiceDir without a HiddenServicePort (tor refuses it): not carried over");
        return;
    }
    torrc_service_name(t, s);
    t->carried[t->n_carried++] = (size_t)(s - t->svcs);
    s->carried = true;
}

/* One option line: `key` and `val` as parsed, `raw` the line as written (for notes). */
static void torrc_option(struct torrc_import *t, struct torrc_service **cur, unsigned line, const char *raw,
                         const char *key, const char *val)
{
    if (key[0] == '/') {
        torrc_note(t, line, raw, "not carried over: a '/' option (clear the option) is not understood here");
        return;
    }
    if (key[0] == '+')
        key++;
    const struct torrc_opt *o = torrc_opt_find(key);
    if (!o) {
        torrc_note(t, line, raw,
                   strncasecmp(key, "HiddenService", 13) == 0
                       ? "an onion service option that import-torrc does not know: not carried over"
                       : "not an onion service option: not carried over (onionfront writes its tor's torrc; "
                         "add a line its tor needs to tor.extra_torrc by hand)");
        return;
    }
    if (o->per_service && !*cur) {
        torrc_note(t, line, raw, "before any HiddenServiceDir (tor refuses it): not carried over");
        return;
    }
    struct torrc_service *s = *cur;
    unsigned long n = 0;
    switch (o->kind) {
    case TORRC_OPT_DIR:
        torrc_end_service(t, s);
        if (!val[0] || val[0] != '/') {
            torrc_note(t, line, raw, "not carried over: not an absolute directory");
            *cur = NULL;
            return;
        }
        *cur = torrc_new_service(t, line, val);
        return;
    case TORRC_OPT_PORT:
        torrc_port(t, s, line, raw, val);
        return;
    case TORRC_OPT_VERSION:
        if (strcmp(val, "2") == 0)
            s->v2 = true;
        else if (strcmp(val, "3") != 0)
            torrc_note(t, line, raw, "not carried over: tor runs version 3 services only");
        return;
    case TORRC_OPT_UINT:
    case TORRC_OPT_BOOL:
    case TORRC_OPT_NON_ANON:
    case TORRC_OPT_SINGLE_HOP:
        if (torrc_parse_uint(val, &n) < 0 || n < o->min || n > o->max) {
            torrc_note(t, line, raw, "not carried over: onionfront takes %s%lu-%lu here",
                       o->kind == TORRC_OPT_UINT ? "" : "0 or 1, not ", o->min, o->max);
            return;
        }
        if (o->kind == TORRC_OPT_NON_ANON)
            t->non_anon = (int)n;
        else if (o->kind == TORRC_OPT_SINGLE_HOP)
            t->single_hop = (int)n;
        else if (torrc_set_path(s->fields, o->field,
                                o->kind == TORRC_OPT_BOOL ? json_boolean(n) : json_integer((json_int_t)n)) < 0)
            t->oom = true;
        return;
    case TORRC_OPT_EXPORT_CIRC:
        if (strcasecmp(val, "haproxy") == 0) {
            s->proxy_protocol = true;
            torrc_note(t, line, raw,
                       "carried over as \"proxy_protocol\": true on every port: onionfront sends PROXY protocol "
                       "version 2 (tor sent version 1) with the circuit id in the source address; check that the "
                       "backends accept version 2");
        } else {
            torrc_note(t, line, raw, "not carried over: only haproxy has an equivalent (proxy_protocol)");
        }
        return;
    case TORRC_OPT_SKIP:
        torrc_note(t, line, raw, "%s", o->why);
        return;
    }
}

/* Parse the quoted value at `p` (just after '"') into `out`: tor's C escapes. Return a pointer after the
 * closing quote, or NULL if it is malformed. */
static const char *torrc_unquote(const char *p, char *out)
{
    for (; *p && *p != '"'; p++) {
        if (*p != '\\') {
            *out++ = *p;
            continue;
        }
        p++;
        switch (*p) {
        case 'n': *out++ = '\n'; break;
        case 't': *out++ = '\t'; break;
        case 'r': *out++ = '\r'; break;
        case '\\': case '"': case '\'': *out++ = *p; break;
        case 'x':
            if (!isxdigit((unsigned char)p[1]) || !isxdigit((unsigned char)p[2]))
                return NULL;
            {
                char hex[3] = {p[1], p[2], 0};
                *out++ = (char)strtoul(hex, NULL, 16);
            }
            p += 2;
            break;
        default:
            return NULL;
        }
    }
    *out = '\0';
    return *p == '"' ? p + 1 : NULL;
}

/* One logical line (continuations joined) at `lbuf`, starting on physical line `line`. */
static void torrc_logical_line(struct torrc_import *t, struct torrc_service **cur, unsigned line, char *lbuf,
                               char *vbuf)
{
    char *p = lbuf;
    while (*p == ' ' || *p == '\t')
        p++;
    if (!*p || *p == '#')
        return;
    char *raw = p;
    size_t rl = strlen(raw);
    while (rl && (raw[rl - 1] == ' ' || raw[rl - 1] == '\t'))
        raw[--rl] = '\0';
    if (*p == '%') {
        torrc_note(t, line, raw,
                   strncmp(p, "%include", 8) == 0
                       ? "not followed: run onionfront import-torrc on the included file too"
                       : "not understood: not carried over");
        return;
    }
    char *k = p;
    size_t kl = strcspn(k, " \t#");
    char key[128];
    if (kl >= sizeof(key)) {
        torrc_note(t, line, raw, "not understood (an option name that long): not carried over");
        return;
    }
    snprintf(key, sizeof(key), "%.*s", (int)kl, k);
    p = k + kl;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p == '"') {
        const char *after = torrc_unquote(p + 1, vbuf);
        while (after && (*after == ' ' || *after == '\t'))
            after++;
        if (!after || (*after && *after != '#') || strlen(vbuf) != strcspn(vbuf, "\n\r")) {
            torrc_note(t, line, raw, "not understood (a quoted value tor would refuse): not carried over");
            return;
        }
    } else {
        size_t vl = strcspn(p, "#");
        while (vl && (p[vl - 1] == ' ' || p[vl - 1] == '\t'))
            vl--;
        memcpy(vbuf, p, vl);
        vbuf[vl] = '\0';
    }
    /* the raw text for notes ends before a comment */
    char *hash = k[kl] == '#' ? k + kl : NULL;
    if (!hash && *p != '"')
        hash = strchr(p, '#');
    if (hash) {
        *hash = '\0';
        rl = strlen(raw);
        while (rl && (raw[rl - 1] == ' ' || raw[rl - 1] == '\t'))
            raw[--rl] = '\0';
    }
    torrc_option(t, cur, line, raw, key, vbuf);
}

struct torrc_import *torrc_import_parse(const char *text, size_t len, const char *path)
{
    (void)path;
    if (len > TORRC_IMPORT_MAX_BYTES)
        return NULL;
    struct torrc_import *t = calloc(1, sizeof(*t));
    char *lbuf = malloc(len + 1), *vbuf = malloc(len + 1);
    if (!t || !lbuf || !vbuf) {
        free(lbuf);
        free(vbuf);
        torrc_import_free(t);
        return NULL;
    }
    struct torrc_service *cur = NULL;
    size_t i = 0, ll = 0;
    unsigned line = 1, start = 1;
    bool cont = false;
    while (i < len && !t->oom) {
        size_t e = i;
        while (e < len && text[e] != '\n')
            e++;
        size_t pl = e - i;
        if (pl && text[i + pl - 1] == '\r')
            pl--;
        const char *pline = text + i;
        /* in a continuation, comment lines are skipped (tor's confline.c) */
        size_t lead = 0; /* the input has no NUL at its end: never read past `pl` */
        while (lead < pl && (pline[lead] == ' ' || pline[lead] == '\t'))
            lead++;
        bool comment = cont && lead < pl && pline[lead] == '#';
        if (!cont)
            start = line;
        if (!comment) {
            bool more = pl && pline[pl - 1] == '\\';
            size_t take = more ? pl - 1 : pl;
            for (size_t j = 0; j < take; j++) /* NUL bytes are not part of a line */
                lbuf[ll++] = pline[j] ? pline[j] : '?';
            cont = more;
        }
        if (!cont) {
            lbuf[ll] = '\0';
            torrc_logical_line(t, &cur, start, lbuf, vbuf);
            ll = 0;
        }
        i = e + 1;
        line++;
    }
    if (cont && !t->oom) {
        lbuf[ll] = '\0';
        torrc_logical_line(t, &cur, start, lbuf, vbuf);
    }
    torrc_end_service(t, cur);
    free(lbuf);
    free(vbuf);
    if (t->oom) {
        torrc_import_free(t);
        return NULL;
    }
    return t;
}

void torrc_import_free(struct torrc_import *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n_svcs; i++) {
        free(t->svcs[i].dir);
        json_decref(t->svcs[i].fields);
        json_decref(t->svcs[i].ports);
    }
    for (size_t i = 0; i < t->n_notes; i++)
        free(t->notes[i]);
    free(t->notes);
    free(t->svcs);
    free(t->carried);
    free(t);
}

bool torrc_import_is_single(const struct torrc_import *t)
{
    return t->non_anon == 1 && t->single_hop == 1;
}

size_t torrc_import_n_services(const struct torrc_import *t)
{
    return t->n_carried;
}

const char *torrc_import_service_dir(const struct torrc_import *t, size_t i)
{
    return i < t->n_carried ? t->svcs[t->carried[i]].dir : NULL;
}

const char *torrc_import_service_name(const struct torrc_import *t, size_t i)
{
    return i < t->n_carried ? t->svcs[t->carried[i]].name : NULL;
}

size_t torrc_import_n_dirs(const struct torrc_import *t)
{
    return t->n_svcs;
}

const char *torrc_import_dir(const struct torrc_import *t, size_t i)
{
    return i < t->n_svcs ? t->svcs[i].dir : NULL;
}

size_t torrc_import_n_notes(const struct torrc_import *t)
{
    return t->n_notes;
}

const char *torrc_import_note(const struct torrc_import *t, size_t i)
{
    return i < t->n_notes ? t->notes[i] : NULL;
}

/* The "ports" array of `s`: one target as "target", several (tor picks one at random per stream) as a
 * pool of "backends", which onionfront balances and health-checks. Returns a new reference. */
static json_t *torrc_ports_json(const struct torrc_service *s)
{
    json_t *ports = json_array();
    const char *virt;
    json_t *targets;
    json_object_foreach(s->ports, virt, targets) {
        json_t *p = json_object();
        if (!ports || !p || json_array_append_new(ports, p) < 0)
            goto oom;
        json_object_set_new(p, "virtual", json_integer(strtol(virt, NULL, 10)));
        if (json_array_size(targets) == 1) {
            json_object_set(p, "target", json_array_get(targets, 0));
        } else {
            json_t *b = json_array();
            size_t k;
            json_t *tg;
            json_array_foreach(targets, k, tg) json_array_append_new(b, json_pack("{s:O}", "address", tg));
            json_object_set_new(p, "backends", b);
        }
        if (s->proxy_protocol)
            json_object_set_new(p, "proxy_protocol", json_true());
    }
    return ports;
oom:
    json_decref(ports);
    return NULL;
}

json_t *torrc_import_config(const struct torrc_import *t)
{
    /* the directories the shipped systemd unit makes (StateDirectory=, RuntimeDirectory=) */
    json_t *c = json_pack("{s:s, s:s, s:[]}", "state_dir", "/var/lib/onionfront", "run_dir", "/run/onionfront",
                          "services");
    if (!c)
        return NULL;
    json_t *svcs = json_object_get(c, "services");
    for (size_t i = 0; i < t->n_carried; i++) {
        const struct torrc_service *s = &t->svcs[t->carried[i]];
        json_t *o = json_pack("{s:s, s:s}", "name", s->name, "mode", torrc_import_is_single(t) ? "single" : "anonymous");
        json_t *ports = torrc_ports_json(s);
        if (!o || !ports || json_object_set_new(o, "ports", ports) < 0 || json_object_update(o, s->fields) < 0 ||
            json_array_append_new(svcs, o) < 0) {
            json_decref(o);
            json_decref(c);
            return NULL;
        }
    }
    return c;
}

json_t *torrc_import_config_service(json_t *config, size_t i)
{
    return json_array_get(json_object_get(config, "services"), i);
}
