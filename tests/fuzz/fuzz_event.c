/* fuzz_event.c — libFuzzer target for the event and reply decoders (controlproto/cp_event.c).
 *
 * The input is framed by cp_reply_parser exactly as bytes from tor would be; every complete reply is then
 * given to every decoder (CIRC, HS_DESC, HS_DESC_CONTENT, STATUS_*, CONF_CHANGED, SIGNAL, GETINFO/GETCONF,
 * ADD_ONION), and each
 * successful decode is checked against the invariants the header promises (fingerprints are 40 uppercase
 * hex digits, progress is -1..100, circuit ids fit 32 bits, ...). A second, smaller oracle uses the same bytes as an argument to
 * the command encoders (cp_cmd.c): whatever they accept must still be exactly one command, so no input can
 * inject a second one. Crashes, sanitizer reports and broken invariants (abort) are findings.
 * Seeds: tests/fuzz/seeds/fuzz_event/ (real lines from tor 0.4.9.11 and TOR-FACTS.md). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "controlproto/cp_cmd.h"
#include "controlproto/cp_event.h"
#include "controlproto/cp_reply.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                                            \
    do {                                                                                                       \
        if (!(cond))                                                                                           \
            abort();                                                                                           \
    } while (0)

static void check_server(const char *fp, const char *nick)
{
    size_t i, n = strlen(fp);

    CHECK(n == 0 || n == 40);
    for (i = 0; i < n; i++)
        CHECK((fp[i] >= '0' && fp[i] <= '9') || (fp[i] >= 'A' && fp[i] <= 'F'));
    CHECK(strlen(nick) <= 19);
}

static void decode_all(const struct cp_reply *r)
{
    char err[256], name[64];
    struct cp_event_circ c;
    struct cp_event_hs_desc h;
    struct cp_event_hs_desc_content hc;
    struct cp_event_status s;
    struct cp_info info;
    struct cp_add_onion_reply a;
    char sig[32];
    size_t i;

    cp_event_name(r, name, sizeof name);
    CHECK(strlen(name) < sizeof name);

    if (cp_event_circ_parse(r, &c, err, sizeof err) == 0) {
        CHECK(r->is_event && strcmp(name, "CIRC") == 0);
        CHECK(c.id <= CP_CIRC_ID_MAX); /* tor's ids are uint32_t */
        CHECK(c.n_hops == 0 || c.hops != NULL);
        for (i = 0; i < c.n_hops; i++) {
            check_server(c.hops[i].fp, c.hops[i].nick);
            CHECK(c.hops[i].fp[0] != '\0' || c.hops[i].nick[0] != '\0');
        }
        CHECK((c.build_flags & ~0x0fu) == 0);
        CHECK(strcmp(cp_circ_status_str(c.status), "") != 0);
    } else {
        CHECK(c.hops == NULL && c.purpose == NULL && c.n_hops == 0);
    }
    cp_event_circ_clear(&c);

    if (cp_event_hs_desc_parse(r, &h, err, sizeof err) == 0) {
        CHECK(strcmp(name, "HS_DESC") == 0);
        CHECK(h.address != NULL && h.auth_type != NULL);
        check_server(h.hsdir_fp, h.hsdir_nick);
        (void)cp_hs_desc_action_str(h.action);
    } else {
        CHECK(h.address == NULL && h.desc_id == NULL);
    }
    cp_event_hs_desc_clear(&h);

    if (cp_event_hs_desc_content_parse(r, &hc, err, sizeof err) == 0) {
        CHECK(strcmp(name, "HS_DESC_CONTENT") == 0);
        CHECK(hc.address != NULL && hc.desc_id != NULL && hc.body != NULL);
        CHECK(hc.body_len <= r->lines[0].data_len && hc.body[hc.body_len] == '\0');
        check_server(hc.hsdir_fp, hc.hsdir_nick);
    } else {
        CHECK(hc.body == NULL);
    }
    cp_event_hs_desc_content_clear(&hc);

    if (cp_event_status_parse(r, &s, err, sizeof err) == 0) {
        CHECK(strncmp(s.type, "STATUS_", 7) == 0 && s.severity != NULL && s.action != NULL);
        CHECK(s.progress >= -1 && s.progress <= 100);
        CHECK(s.tag == NULL || s.tag == cp_args_get(&s.args, "TAG"));
        for (i = 0; i < s.args.n_pos; i++)
            CHECK(s.args.pos[i] != NULL);
    } else {
        CHECK(s.type == NULL);
    }
    cp_event_status_clear(&s);

    if (cp_info_parse(r, &info, err, sizeof err) == 0) {
        CHECK(!r->is_event && cp_reply_is_ok(r));
        CHECK(info.n <= r->n_lines);
        for (i = 0; i < info.n; i++)
            CHECK(info.items[i].key != NULL && info.items[i].key[0] != '\0');
        if (info.n > 0)
            CHECK(cp_info_get(&info, info.items[0].key) == info.items[0].value);
    } else {
        CHECK(info.n == 0 && info.items == NULL);
    }
    cp_info_clear(&info);

    if (cp_event_conf_changed_parse(r, &info, err, sizeof err) == 0) {
        CHECK(r->is_event && strcmp(name, "CONF_CHANGED") == 0);
        CHECK(info.n + 2 <= r->n_lines);
        for (i = 0; i < info.n; i++)
            CHECK(info.items[i].key != NULL && info.items[i].key[0] != '\0' && strchr(info.items[i].key, '=') == NULL);
    } else {
        CHECK(info.n == 0 && info.items == NULL);
    }
    cp_info_clear(&info);

    if (cp_event_signal_parse(r, sig, sizeof sig, err, sizeof err) == 0)
        CHECK(strcmp(name, "SIGNAL") == 0 && sig[0] != '\0' && strlen(sig) < sizeof sig);
    else
        CHECK(sig[0] == '\0');

    if (cp_add_onion_reply_parse(r, &a, err, sizeof err) == 0) {
        CHECK(a.service_id != NULL && strlen(a.service_id) == 56);
        CHECK(a.private_key == NULL || strchr(a.private_key, ':') != NULL);
    } else {
        CHECK(a.service_id == NULL && a.private_key == NULL);
    }
    cp_add_onion_reply_clear(&a);
}

/* A single-line command: CRLF at the end and nowhere else. */
static void check_one_line(const char *cmd)
{
    size_t n = strlen(cmd);

    CHECK(n >= 2 && cmd[n - 2] == '\r' && cmd[n - 1] == '\n');
    CHECK(memchr(cmd, '\r', n - 2) == NULL && memchr(cmd, '\n', n - 2) == NULL);
}

/* The encoders must never let an argument end the command early. */
static void encode_all(const uint8_t *data, size_t size)
{
    char err[256];
    char *s, *cmd;
    size_t n = size > 512 ? 512 : size, i;

    if ((s = malloc(n + 1)) == NULL)
        return;
    memcpy(s, data, n);
    s[n] = '\0';

    {
        struct cp_conf_item it[2] = {{"HiddenServiceDir", "/hs/a"}, {"HiddenServicePort", s}};

        if ((cmd = cp_cmd_setconf(it, 2, err, sizeof err)) != NULL) {
            check_one_line(cmd);
            CHECK(strpbrk(s, "\r\n") == NULL);
            free(cmd);
        }
    }
    {
        const char *keys[1] = {s};

        if ((cmd = cp_cmd_getinfo(keys, 1, err, sizeof err)) != NULL) {
            check_one_line(cmd);
            CHECK(strchr(s, ' ') == NULL);
            free(cmd);
        }
    }
    if ((cmd = cp_cmd_authenticate_password(s, err, sizeof err)) != NULL) {
        check_one_line(cmd);
        free(cmd);
    }
    {
        struct cp_onion_port port = {80, s};
        struct cp_add_onion a = {"NEW", "BEST", NULL, 0, 0, &port, 1};

        if ((cmd = cp_cmd_add_onion(&a, err, sizeof err)) != NULL) {
            check_one_line(cmd);
            free(cmd);
        }
    }
    /* HSPOST: the data block (all `size` bytes) may hold anything; the command must end at its own ".". */
    if ((cmd = cp_cmd_hspost(NULL, 0, NULL, (const char *)data, size, err, sizeof err)) != NULL) {
        size_t len = strlen(cmd);
        const char *end = strstr(cmd, "\r\n.\r\n");

        CHECK(end != NULL && (size_t)(end - cmd) + 5 == len);
        for (i = 0; i < len; i++) {
            if (cmd[i] == '\n')
                CHECK(i > 0 && cmd[i - 1] == '\r');
            if (cmd[i] == '\r')
                CHECK(i + 1 < len && cmd[i + 1] == '\n');
        }
        free(cmd);
    }
    free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cp_reply_parser *p;
    struct cp_reply *r;
    char err[256];

    /* Small caps so that the size limits are reached too. */
    if ((p = cp_reply_parser_new(4096, 65536)) == NULL)
        return 0;
    (void)cp_reply_parser_feed(p, (const char *)data, size, err, sizeof err);
    while ((r = cp_reply_parser_next(p)) != NULL) {
        decode_all(r);
        cp_reply_free(r);
    }
    cp_reply_parser_free(p);
    encode_all(data, size);
    return 0;
}
