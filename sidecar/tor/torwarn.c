/* torwarn.c — tor's expected warnings, one table (see torwarn.h). Each entry names the condition under
 * which onionfront caused the warning; outside it the same text stays a warning. */
#include "sidecar/tor/torwarn.h"

#include <stddef.h>
#include <string.h>

enum torwarn_when {
    WHEN_SINGLE_ONION,
    WHEN_DROPS_ROOT,
    WHEN_TESTING_NETWORK,
    WHEN_HOSTS_SERVICES,
    WHEN_CLIENT,
};

static const struct torwarn_entry {
    enum torwarn_kind kind;
    enum torwarn_when when;
    bool whole;       /* the text is the whole message; else its start */
    const char *text;
} torwarn_table[] = {
    /* tor 0.4.9 config.c, options_act: printed at every start of a tor in single onion mode. */
    {TORWARN_NON_ANONYMOUS_MODE, WHEN_SINGLE_ONION, true,
     "HiddenServiceNonAnonymousMode is set. Every hidden service on this tor instance is NON-ANONYMOUS. If the "
     "HiddenServiceNonAnonymousMode option is changed, Tor will refuse to launch hidden services from the same "
     "directories, to protect your anonymity against config errors. This setting is for experimental use only."},
    {TORWARN_NON_ANONYMOUS_MODE, WHEN_SINGLE_ONION, true,
     "This copy of Tor was compiled or configured to run in a non-anonymous mode. It will provide NO ANONYMITY."},
    {TORWARN_STARTED_AS_ROOT, WHEN_DROPS_ROOT, true,
     "You are running Tor as root. You don't need to, and you probably shouldn't."},
    /* config.c: a private network's own authorities and testing options; never on the public network. */
    {TORWARN_TEST_NETWORK, WHEN_TESTING_NETWORK, false,
     "You have used DirAuthority or AlternateDirAuthority to specify alternate directory authorities in your "
     "configuration."},
    {TORWARN_TEST_NETWORK, WHEN_TESTING_NETWORK, false, "TestingTorNetwork is set."},
    /* hs_service.c: a rendezvous or introduction circuit finished for a service tor no longer has. tor
     * builds them only for its services, so the service was removed (a reload, a roll's hand-over, a
     * renewal) while the circuit was being built; the visitor's client tries again. */
    {TORWARN_REMOVED_SERVICE, WHEN_HOSTS_SERVICES, false, "Unknown service identity key "},
    /* hs_cache.c: tor's client descriptor cache counts its bytes wrongly and says so once (a BUG line of
     * tor's, not of the network or the service). */
    {TORWARN_CLIENT_CACHE_BUG, WHEN_CLIENT, true,
     "hs_cache_decrement_allocation(): Bug: Underflow in hs_cache_decrement_allocation"},
};

/* Whether `text` is `e`'s message. tor ends each of its BUG lines (log domain LD_BUG) with the version it
 * runs, " (on Tor 0.4.9.11 )" (log.c, tor_bug_suffix): a whole message may carry that suffix. */
static bool torwarn_text_matches(const struct torwarn_entry *e, const char *text)
{
    size_t n = strlen(e->text);
    if (strncmp(text, e->text, n) != 0)
        return false;
    if (!e->whole || text[n] == '\0')
        return true;
    const char *rest = text + n, *suffix = " (on Tor ";
    size_t rest_len = strlen(rest);
    return strncmp(rest, suffix, strlen(suffix)) == 0 && rest_len > strlen(suffix) && rest[rest_len - 1] == ')' &&
           strchr(rest + strlen(suffix), '(') == NULL;
}

static bool torwarn_applies(enum torwarn_when w, const struct torwarn_ctx *c)
{
    switch (w) {
    case WHEN_SINGLE_ONION:
        return c->single_onion;
    case WHEN_DROPS_ROOT:
        return c->drops_root;
    case WHEN_TESTING_NETWORK:
        return c->testing_network;
    case WHEN_HOSTS_SERVICES:
        return c->hosts_services;
    case WHEN_CLIENT:
        return c->client;
    }
    return false;
}

/* "Unknown service identity key X on the rendezvous|introduction circuit ...": the removal case only,
 * not tor's LD_BUG variant of the same words ("... when handling ..."). */
static bool torwarn_removed_service_text(const char *text)
{
    return strstr(text, " on the rendezvous circuit ") || strstr(text, " on the introduction circuit ");
}

enum torwarn_kind torwarn_classify(const char *text, const struct torwarn_ctx *ctx)
{
    for (size_t i = 0; i < sizeof(torwarn_table) / sizeof(torwarn_table[0]); i++) {
        const struct torwarn_entry *e = &torwarn_table[i];
        if (!torwarn_text_matches(e, text) || !torwarn_applies(e->when, ctx))
            continue;
        if (e->kind == TORWARN_REMOVED_SERVICE && !torwarn_removed_service_text(text))
            continue;
        return e->kind;
    }
    return TORWARN_UNEXPECTED;
}

const char *torwarn_kind_str(enum torwarn_kind k)
{
    switch (k) {
    case TORWARN_UNEXPECTED:
        return "unexpected";
    case TORWARN_NON_ANONYMOUS_MODE:
        return "non-anonymous-mode";
    case TORWARN_STARTED_AS_ROOT:
        return "started-as-root";
    case TORWARN_TEST_NETWORK:
        return "test-network";
    case TORWARN_REMOVED_SERVICE:
        return "removed-service";
    case TORWARN_CLIENT_CACHE_BUG:
        return "client-cache-bug";
    }
    return "unexpected";
}

enum log_level tor_line_level(const char *line)
{
    static const struct { const char *tag; enum log_level level; } tags[] = {
        {"[err] ", LOG_LVL_ERROR},   {"[warn] ", LOG_LVL_WARN},   {"[notice] ", LOG_LVL_NOTICE},
        {"[info] ", LOG_LVL_INFO},   {"[debug] ", LOG_LVL_DEBUG},
    };
    /* tor's log format (log.c, log_prefix_): a timestamp, then the severity in brackets. The first
     * "[" decides: the message after it may quote anything. */
    const char *b = strchr(line, '[');
    for (size_t i = 0; b && i < sizeof(tags) / sizeof(tags[0]); i++)
        if (strncmp(b, tags[i].tag, strlen(tags[i].tag)) == 0)
            return tags[i].level;
    return LOG_LVL_NOTICE;
}

enum log_level tor_line_relay_level(const char *line, const struct torwarn_ctx *ctx)
{
    enum log_level level = tor_line_level(line);
    const char *text = level == LOG_LVL_WARN ? strstr(line, "[warn] ") : NULL;
    if (!text)
        return level;
    return torwarn_classify(text + strlen("[warn] "), ctx) != TORWARN_UNEXPECTED ? LOG_LVL_NOTICE : level;
}
