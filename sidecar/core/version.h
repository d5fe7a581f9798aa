/* version.h — onionfront's version, one definition for the command line, status and metrics. The build
 * may override it with -DONIONFRONT_VERSION=... */
#ifndef ONIONFRONT_VERSION_H
#define ONIONFRONT_VERSION_H

#ifndef ONIONFRONT_VERSION
#define ONIONFRONT_VERSION "0.1.0"
#endif

#endif
