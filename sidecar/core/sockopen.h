/* sockopen.h — sockets onionfront opens are close-on-exec from their first instant, so no program it
 * runs (tor during a roll, Onionbalance, an on_change hook) can inherit a backend connection.
 *
 * For the connects libevent would otherwise make with a socket of its own, which it opens without
 * SOCK_CLOEXEC. libcurl's sockets get the same rule in check_http.c (CURLOPT_OPENSOCKETFUNCTION).
 * Owns nothing beyond the call; never logs. (proc.c also closes every descriptor above stderr in each
 * child: this is the rule for descriptors, that one the rule for children.) */
#ifndef ONIONFRONT_SOCKOPEN_H
#define ONIONFRONT_SOCKOPEN_H

#include <sys/socket.h>

struct bufferevent;

/* Open a stream socket for `sa`'s family (SOCK_NONBLOCK | SOCK_CLOEXEC), hand it to `bev` (a socket
 * bufferevent without a descriptor, BEV_OPT_CLOSE_ON_FREE: freeing `bev` closes it) and start
 * bufferevent_socket_connect on it. Return as bufferevent_socket_connect does: 0 under way (or failed
 * already, reported through the event callback), -1 with errno set. */
int sockopen_bufferevent_connect(struct bufferevent *bev, const struct sockaddr *sa, int salen);

#endif
