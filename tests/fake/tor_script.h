/* tor_script.h — the control-port lines of an attached tor's session with tor.c, for fake_ctl scripts:
 * what tor.c sends after authenticating (its setup and verification), good answers to them, the
 * steps of a session up to the hand-over, and what a worker (worker.c) sends on top of it. Shared by
 * the tests of tor.c and of what runs on top of it. */
#ifndef TESTS_TOR_SCRIPT_H
#define TESTS_TOR_SCRIPT_H

#include "tests/fake/fake_ctl.h"

/* What tor.c sends, in order, after authenticating to an attached tor. */
#define SETEVENTS_LINE "SETEVENTS STATUS_CLIENT STATUS_GENERAL HS_DESC HS_DESC_CONTENT CIRC CONF_CHANGED SIGNAL"
#define GETCONF_LINE "GETCONF HiddenServiceSingleHopMode HiddenServiceNonAnonymousMode"
#define GETINFO_LINE                                                                                         \
    "GETINFO net/listeners/socks net/listeners/trans net/listeners/natd net/listeners/dns "                 \
    "net/listeners/httptunnel version process/uid process/pid"
#define BOOTSTRAP_LINE "GETINFO status/bootstrap-phase"

#define GOOD_GETCONF "250-HiddenServiceSingleHopMode=1\r\n250 HiddenServiceNonAnonymousMode=1\r\n"
#define GOOD_GETINFO                                                                                         \
    "250-net/listeners/socks=\r\n250-net/listeners/trans=\r\n250-net/listeners/natd=\r\n"                   \
    "250-net/listeners/dns=\r\n250-net/listeners/httptunnel=\r\n250-version=0.4.9.11\r\n250 OK\r\n"
#define BOOTSTRAP_DONE                                                                                       \
    "250-status/bootstrap-phase=NOTICE BOOTSTRAP PROGRESS=100 TAG=done SUMMARY=\"Done\"\r\n250 OK\r\n"

/* NULL authentication (what CP_AUTH_AUTO picks when tor offers only NULL), then the setup commands up
 * to the verification answers. */
#define PROTOCOLINFO_NULL                                                                                    \
    "250-PROTOCOLINFO 1\r\n250-AUTH METHODS=NULL\r\n250-VERSION Tor=\"0.4.9.11\"\r\n250 OK\r\n"
#define AUTH_AND_SETUP(getconf_answer, getinfo_answer)                                                       \
    {FAKE_CTL_EXPECT, "PROTOCOLINFO 1", 0},                                                                 \
    {FAKE_CTL_SEND, PROTOCOLINFO_NULL, 0},                                                                  \
    {FAKE_CTL_EXPECT, "AUTHENTICATE", 0},                                                                   \
    {FAKE_CTL_SEND, "250 OK\r\n", 0},                                                                       \
    {FAKE_CTL_EXPECT, SETEVENTS_LINE, 0},                                                                   \
    {FAKE_CTL_SEND, "250 OK\r\n", 0},                                                                       \
    {FAKE_CTL_EXPECT, GETCONF_LINE, 0},                                                                     \
    {FAKE_CTL_SEND, getconf_answer, 0},                                                                     \
    {FAKE_CTL_EXPECT, GETINFO_LINE, 0},                                                                     \
    {FAKE_CTL_SEND, getinfo_answer, 0}

/* A good tor up to a finished bootstrap. */
#define GOOD_SESSION                                                                                         \
    AUTH_AND_SETUP(GOOD_GETCONF, GOOD_GETINFO),                                                             \
    {FAKE_CTL_EXPECT, BOOTSTRAP_LINE, 0},                                                                   \
    {FAKE_CTL_SEND, BOOTSTRAP_DONE, 0}

/* What the worker sends on a new connection, after tor.c's verification: service.c asks for the tor's
 * own services, verify.c checks the mode, then tor.c asks for the bootstrap phase. */
#define HS_OPTIONS_LINE "GETCONF HiddenServiceOptions"
#define NO_HS_OPTIONS "250 HiddenServiceOptions\r\n" /* control-spec 3.3: no service configured */
#define VERIFY_INFO_LINE                                                                                     \
    "GETINFO net/listeners/socks net/listeners/trans net/listeners/natd net/listeners/dns "                 \
    "net/listeners/httptunnel"
#define VERIFY_INFO                                                                                          \
    "250-net/listeners/socks=\r\n250-net/listeners/trans=\r\n250-net/listeners/natd=\r\n"                   \
    "250-net/listeners/dns=\r\n250-net/listeners/httptunnel=\r\n250 OK\r\n"

/* A good tor until our services are handed over (the SETCONF is answered by the next step). */
#define HANDED_OVER                                                                                          \
    AUTH_AND_SETUP(GOOD_GETCONF, GOOD_GETINFO),                                                             \
    {FAKE_CTL_EXPECT, HS_OPTIONS_LINE, 0},                                                                  \
    {FAKE_CTL_EXPECT, GETCONF_LINE, 0},                                                                     \
    {FAKE_CTL_EXPECT, VERIFY_INFO_LINE, 0},                                                                 \
    {FAKE_CTL_EXPECT, BOOTSTRAP_LINE, 0},                                                                   \
    {FAKE_CTL_SEND, NO_HS_OPTIONS GOOD_GETCONF VERIFY_INFO BOOTSTRAP_DONE, 0},                              \
    {FAKE_CTL_EXPECT_PREFIX, "SETCONF HiddenServiceDir=", 0}

#endif
