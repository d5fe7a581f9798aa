/* status.c — the status protocol without I/O (see status.h): the one command table, the request
 * parser, the reply encoder with the dispatch to the providers, and the access rules (who may run what,
 * who is admitted).
 *
 * Owns no socket and no state: everything here is a pure function of its arguments (and the providers
 * it calls), so the unit tests drive it without a server. The server that frames lines and applies these
 * rules to real peers is status_server.c; it calls into this file, never the other way. */
#include "sidecar/ops/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The one table of commands: the protocol's spelling, and whether the command changes something (only an
 * admin peer may run it) or only reads. */
static const struct {
    const char *name;
    bool admin;
} status_cmds[STATUS_CMD_COUNT_] = {
    [STATUS_CMD_STATUS] = {"status", false},       [STATUS_CMD_SERVICES] = {"services", false},
    [STATUS_CMD_BACKENDS] = {"backends", false},   [STATUS_CMD_CIRCUITS] = {"circuits", false},
    [STATUS_CMD_METRICS] = {"metrics", false},     [STATUS_CMD_RELOAD] = {"reload", true},
    [STATUS_CMD_HELP] = {"help", false},           [STATUS_CMD_LOG_LEVEL] = {"log-level", true},
    [STATUS_CMD_RESTART_TOR] = {"restart-tor", true}, [STATUS_CMD_SERVICES_DETAIL] = {"services-detail", false},
};

const char *status_cmd_str(enum status_cmd c)
{
    return (unsigned)c < STATUS_CMD_COUNT_ ? status_cmds[c].name : "unknown";
}

bool status_cmd_is_admin(enum status_cmd c)
{
    return (unsigned)c >= STATUS_CMD_COUNT_ || status_cmds[c].admin; /* unknown: the stricter rule */
}

/* ---- the request parser (pure) --------------------------------------------------------------------- */

static bool status_cmd_lookup(const char *name, size_t len, enum status_cmd *out)
{
    for (int i = 0; i < STATUS_CMD_COUNT_; i++)
        if (strlen(status_cmds[i].name) == len && memcmp(status_cmds[i].name, name, len) == 0) {
            *out = (enum status_cmd)i;
            return true;
        }
    return false;
}

/* Copy at most `max` bytes of `src` (`len` bytes) as printable ASCII ('?' for anything else) — request
 * bytes quoted in an error must not break the JSON reply or a terminal. */
static void status_quote(char *dst, size_t dstlen, const char *src, size_t len, size_t max)
{
    size_t n = 0;
    if (dstlen == 0)
        return;
    for (size_t i = 0; i < len && i < max && n + 1 < dstlen; i++) {
        unsigned char ch = (unsigned char)src[i];
        dst[n++] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
    }
    if (len > max && n + 4 < dstlen) {
        memcpy(dst + n, "...", 3);
        n += 3;
    }
    dst[n] = '\0';
}

/* Make `err` printable ASCII in place (jansson's messages may quote request bytes). */
static void status_sanitize(char *err)
{
    for (unsigned char *p = (unsigned char *)err; *p; p++)
        if (*p < 0x20 || *p >= 0x7f)
            *p = '?';
}

static const char status_usage[] = "send a JSON object such as {\"cmd\":\"status\"} or a command word "
                                   "(status, services, backends, circuits, metrics, reload, help, "
                                   "log-level LEVEL [SECONDS], restart-tor, services-detail)";

#define STATUS_MAX_SECONDS 604800u /* log-level: a week */

/* log-level's arguments, from either form: a level word of lower-case letters and optional seconds
 * (has_seconds; `seconds` may be out of range, which is refused here). */
static enum status_parse_result status_parse_log_level(const char *level, size_t level_len, bool has_seconds,
                                                       long long seconds, struct status_request *req, char *err,
                                                       size_t errlen)
{
    bool word = level_len > 0 && level_len < sizeof(req->level);
    for (size_t i = 0; word && i < level_len; i++)
        word = level[i] >= 'a' && level[i] <= 'z';
    if (!word) {
        snprintf(err, errlen, "log-level: level must be debug, info, notice, warn, error or config");
        return STATUS_PARSE_ERROR;
    }
    if (has_seconds && (seconds < 1 || seconds > STATUS_MAX_SECONDS)) {
        snprintf(err, errlen, "log-level: seconds must be 1-%u", STATUS_MAX_SECONDS);
        return STATUS_PARSE_ERROR;
    }
    memcpy(req->level, level, level_len);
    req->level[level_len] = '\0';
    req->seconds = has_seconds ? (unsigned)seconds : 0;
    return STATUS_PARSE_OK;
}

static enum status_parse_result status_parse_json(const char *p, size_t n, struct status_request *req, char *err,
                                                  size_t errlen)
{
    json_error_t jerr;
    /* jansson refuses "\u0000" in strings by default, so keys and values are C strings. */
    json_t *root = json_loadb(p, n, JSON_REJECT_DUPLICATES, &jerr);
    enum status_parse_result rc = STATUS_PARSE_ERROR;
    char q[48];
    if (!root) {
        snprintf(err, errlen, "malformed JSON at column %d: %s", jerr.column, jerr.text);
        return STATUS_PARSE_ERROR;
    }
    if (!json_is_object(root)) {
        snprintf(err, errlen, "request must be a JSON object; %s", status_usage);
        goto done;
    }
    /* "id" first, so that every later error can still be matched to its request. */
    json_t *id = json_object_get(root, "id");
    if (id) {
        if (!(json_is_integer(id) || (json_is_string(id) && json_string_length(id) <= STATUS_ID_MAX))) {
            snprintf(err, errlen, "id: must be an integer or a string of at most %d bytes", STATUS_ID_MAX);
            goto done;
        }
        req->id = json_incref(id);
    }
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        if (strcmp(key, "cmd") != 0 && strcmp(key, "id") != 0 && strcmp(key, "level") != 0 &&
            strcmp(key, "seconds") != 0) {
            status_quote(q, sizeof(q), key, strlen(key), 32);
            snprintf(err, errlen, "unknown member \"%s\" (a request has \"cmd\" and optionally \"id\")", q);
            goto done;
        }
    }
    json_t *cmd = json_object_get(root, "cmd");
    if (!cmd) {
        snprintf(err, errlen, "cmd: missing; %s", status_usage);
        goto done;
    }
    if (!json_is_string(cmd)) {
        snprintf(err, errlen, "cmd: must be a string");
        goto done;
    }
    if (!status_cmd_lookup(json_string_value(cmd), json_string_length(cmd), &req->cmd)) {
        status_quote(q, sizeof(q), json_string_value(cmd), json_string_length(cmd), 32);
        snprintf(err, errlen, "cmd: unknown command \"%s\"; %s", q, status_usage);
        goto done;
    }
    json_t *level = json_object_get(root, "level"), *seconds = json_object_get(root, "seconds");
    if (req->cmd != STATUS_CMD_LOG_LEVEL) {
        if (level || seconds) {
            snprintf(err, errlen, "%s: takes no \"%s\"", status_cmd_str(req->cmd), level ? "level" : "seconds");
            goto done;
        }
    } else if (!json_is_string(level)) {
        snprintf(err, errlen, "log-level: level: %s", level ? "must be a string" : "missing");
        goto done;
    } else if (seconds && !json_is_integer(seconds)) {
        snprintf(err, errlen, "log-level: seconds: must be an integer");
        goto done;
    } else {
        rc = status_parse_log_level(json_string_value(level), json_string_length(level), seconds != NULL,
                                    seconds ? (long long)json_integer_value(seconds) : 0, req, err, errlen);
        goto done;
    }
    rc = STATUS_PARSE_OK;
done:
    json_decref(root);
    return rc;
}

/* "log-level"'s words after the command: " LEVEL [SECONDS]" (`len` bytes, starting with a blank). */
static enum status_parse_result status_parse_bare_log_level(const char *p, size_t len, struct status_request *req,
                                                            char *err, size_t errlen)
{
    const char *word[3];
    size_t wlen[3], n = 0, i = 0;
    while (i < len && n < 3) {
        while (i < len && (p[i] == ' ' || p[i] == '\t'))
            i++;
        if (i == len)
            break;
        word[n] = p + i;
        while (i < len && p[i] != ' ' && p[i] != '\t')
            i++;
        wlen[n] = (size_t)(p + i - word[n]);
        n++;
    }
    if (n == 3 || n == 0) {
        snprintf(err, errlen, "log-level: takes LEVEL and optionally SECONDS");
        return STATUS_PARSE_ERROR;
    }
    long long seconds = 0;
    for (size_t k = 0; n == 2 && k < wlen[1]; k++) {
        if (word[1][k] < '0' || word[1][k] > '9' || k >= 9) {
            seconds = -1; /* refused below */
            break;
        }
        seconds = seconds * 10 + (word[1][k] - '0');
    }
    return status_parse_log_level(word[0], wlen[0], n == 2, seconds, req, err, errlen);
}

enum status_parse_result status_parse_request(const char *line, size_t len, struct status_request *req, char *err,
                                              size_t errlen)
{
    char q[48];
    req->cmd = STATUS_CMD_STATUS;
    req->id = NULL;
    req->level[0] = '\0';
    req->seconds = 0;
    if (errlen)
        err[0] = '\0';
    if (len > 0 && line[len - 1] == '\r')
        len--;
    if (len > STATUS_MAX_LINE) {
        snprintf(err, errlen, "request too long (more than %d bytes)", STATUS_MAX_LINE);
        return STATUS_PARSE_ERROR;
    }
    while (len > 0 && (line[0] == ' ' || line[0] == '\t')) {
        line++;
        len--;
    }
    while (len > 0 && (line[len - 1] == ' ' || line[len - 1] == '\t'))
        len--;
    if (len == 0)
        return STATUS_PARSE_EMPTY;

    enum status_parse_result rc;
    if (line[0] == '{') {
        rc = status_parse_json(line, len, req, err, errlen);
    } else {
        /* A bare command word for people at a terminal: lower-case letters and '-' only, so nothing else
         * that happens to be typed (or sent by a confused program) can look like a command; log-level's
         * arguments follow as words. */
        size_t i = 0;
        while (i < len && ((line[i] >= 'a' && line[i] <= 'z') || line[i] == '-'))
            i++;
        if (i < len && (line[i] == ' ' || line[i] == '\t') && status_cmd_lookup(line, i, &req->cmd) &&
            req->cmd == STATUS_CMD_LOG_LEVEL) {
            rc = status_parse_bare_log_level(line + i, len - i, req, err, errlen);
        } else if (i == len && status_cmd_lookup(line, len, &req->cmd)) {
            rc = req->cmd == STATUS_CMD_LOG_LEVEL ? status_parse_log_level("", 0, false, 0, req, err, errlen)
                                                  : STATUS_PARSE_OK;
        } else if (i == len) {
            status_quote(q, sizeof(q), line, len, 32);
            snprintf(err, errlen, "unknown command \"%s\"; %s", q, status_usage);
            rc = STATUS_PARSE_ERROR;
        } else {
            snprintf(err, errlen, "malformed request; %s", status_usage);
            rc = STATUS_PARSE_ERROR;
        }
    }
    if (errlen)
        status_sanitize(err);
    return rc;
}

void status_request_clear(struct status_request *req)
{
    json_decref(req->id);
    req->id = NULL;
}

/* ---- replies ----------------------------------------------------------------------------------------- */

/* Encode `reply` (stolen) as one line. */
static char *status_encode(json_t *reply, size_t *len)
{
    char *out = NULL;
    const size_t flags = JSON_COMPACT; /* compact output never contains a raw newline */
    size_t n = reply ? json_dumpb(reply, NULL, 0, flags) : 0;
    if (n > 0 && (out = malloc(n + 1)) != NULL) {
        if (json_dumpb(reply, out, n, flags) != n) {
            free(out);
            out = NULL;
        } else {
            out[n] = '\n';
            *len = n + 1;
        }
    }
    json_decref(reply);
    return out;
}

char *status_error_line(const char *msg, const json_t *id, size_t *len)
{
    json_t *r = json_object();
    json_t *m = json_string(msg);
    if (!m) /* not UTF-8: callers pass sanitized text, but never send nothing */
        m = json_string("internal error: undecodable message");
    if (!r || json_object_set_new(r, "ok", json_false()) < 0 || json_object_set_new(r, "error", m) < 0 ||
        (id && json_object_set(r, "id", (json_t *)id) < 0)) {
        json_decref(r);
        return NULL;
    }
    return status_encode(r, len);
}

static json_t *status_help(void)
{
    json_t *a = json_array();
    for (int i = 0; a && i < STATUS_CMD_COUNT_; i++)
        json_array_append_new(a, json_string(status_cmds[i].name));
    return a;
}

char *status_execute(const struct status_providers *p, const struct status_request *req, size_t *len)
{
    char msg[1024] = "";
    json_t *result = NULL;
    json_t *(*fn)(void *) = NULL;
    const char *name = status_cmd_str(req->cmd);

    switch (req->cmd) {
    case STATUS_CMD_STATUS:
        fn = p->status;
        goto call;
    case STATUS_CMD_SERVICES:
        fn = p->services;
        goto call;
    case STATUS_CMD_SERVICES_DETAIL:
        fn = p->services_detail;
        goto call;
    case STATUS_CMD_BACKENDS:
        fn = p->backends;
        goto call;
    case STATUS_CMD_CIRCUITS:
        fn = p->circuits;
    call:
        if (!fn)
            snprintf(msg, sizeof(msg), "%s: not available", name);
        else
            result = fn(p->arg);
        break;
    case STATUS_CMD_METRICS:
        if (!p->metrics) {
            snprintf(msg, sizeof(msg), "%s: not available", name);
            break;
        }
        char *text = p->metrics(p->arg);
        if (text && !(result = json_string(text)))
            snprintf(msg, sizeof(msg), "metrics: the text is not valid UTF-8");
        free(text);
        break;
    case STATUS_CMD_RELOAD:
    case STATUS_CMD_RESTART_TOR: {
        bool reload = req->cmd == STATUS_CMD_RELOAD;
        int (*act)(void *, char *, size_t) = reload ? p->reload : p->restart_tor;
        if (!act) {
            snprintf(msg, sizeof(msg), "%s: not available", name);
            break;
        }
        if (act(p->arg, msg, sizeof(msg)) < 0) {
            if (!msg[0])
                snprintf(msg, sizeof(msg), "%s failed", name);
            break;
        }
        result = json_pack("{s:b}", reload ? "reloaded" : "started", 1);
        if (result && msg[0])
            json_object_set_new(result, "message", json_string(msg)); /* NULL (not UTF-8) is refused */
        msg[0] = '\0';
        break;
    }
    case STATUS_CMD_HELP:
        result = status_help();
        break;
    case STATUS_CMD_LOG_LEVEL:
        if (!p->log_level) {
            snprintf(msg, sizeof(msg), "%s: not available", name);
            break;
        }
        if (p->log_level(req->level, req->seconds, msg, sizeof(msg)) < 0) {
            if (!msg[0])
                snprintf(msg, sizeof(msg), "log-level failed");
            break;
        }
        result = json_pack("{s:s, s:s}", "level", req->level, "message", msg); /* both ASCII */
        msg[0] = '\0';
        break;
    default:
        snprintf(msg, sizeof(msg), "unknown command");
        break;
    }
    if (!result) {
        if (!msg[0])
            snprintf(msg, sizeof(msg), "%s: internal error", name);
        status_sanitize(msg);
        return status_error_line(msg, req->id, len);
    }
    json_t *r = json_object();
    if (!r) {
        json_decref(result);
        return NULL;
    }
    if (json_object_set_new(r, "ok", json_true()) < 0 || json_object_set_new(r, "result", result) < 0 ||
        (req->id && json_object_set(r, "id", req->id) < 0)) {
        json_decref(r);
        return NULL;
    }
    return status_encode(r, len);
}

/* ---- peer check ---------------------------------------------------------------------------------------- */

/* Is `peer` listed: its uid in `uids`, or its primary or a supplementary group in `gids`? */
static bool status_peer_listed(const uid_t *uids, size_t n_uids, const gid_t *gids, size_t n_gids,
                               const struct status_peer *peer)
{
    for (size_t i = 0; i < n_uids; i++)
        if (uids[i] == peer->uid)
            return true;
    for (size_t i = 0; i < n_gids; i++) {
        if (gids[i] == peer->gid)
            return true;
        for (size_t j = 0; j < peer->n_groups; j++)
            if (gids[i] == peer->groups[j])
                return true;
    }
    return false;
}

enum status_access status_peer_access(const struct status_acl *acl, const struct status_peer *peer)
{
    if (peer->uid == 0 || peer->uid == acl->self_uid ||
        status_peer_listed(acl->admin_uids, acl->n_admin_uids, acl->admin_gids, acl->n_admin_gids, peer))
        return STATUS_ACCESS_ADMIN;
    if (status_peer_listed(acl->uids, acl->n_uids, acl->gids, acl->n_gids, peer))
        return STATUS_ACCESS_READ;
    return STATUS_ACCESS_NONE;
}

bool status_authorize(enum status_cmd cmd, enum status_access access, uid_t uid, char *err, size_t errlen)
{
    if (access == STATUS_ACCESS_ADMIN || (access == STATUS_ACCESS_READ && !status_cmd_is_admin(cmd)))
        return true;
    if (access == STATUS_ACCESS_READ)
        snprintf(err, errlen,
                 "%s: permission denied: uid %lu may read status but not run admin commands; add it to "
                 "status.admin_uids", status_cmd_str(cmd), (unsigned long)uid);
    else
        snprintf(err, errlen, "%s: permission denied: uid %lu may not use onionfront's status socket (see "
                 "status.allowed_uids and status.admin_uids)", status_cmd_str(cmd), (unsigned long)uid);
    return false;
}

enum status_admit status_admit(size_t total, size_t of_uid, bool privileged)
{
    if (privileged)
        return total < STATUS_MAX_CLIENTS ? STATUS_ADMIT_OK : STATUS_ADMIT_FULL;
    if (total >= STATUS_MAX_CLIENTS - STATUS_RESERVED_SLOTS)
        return STATUS_ADMIT_FULL;
    return of_uid < STATUS_MAX_PER_UID ? STATUS_ADMIT_OK : STATUS_ADMIT_UID_FULL;
}
