/*
 * twiced-worker.c - the executable twiced's master starts for its children
 * (proc/spawn.c): a worker (worker/process.c), or the probe that checks a
 * configuration's plugins and then its store and queues (plugin/probe.c,
 * duty/oneshot.c). It links libcurl, libpq and OpenSSL, which twiced does
 * not. Not for running by hand: its command line is the master's.
 */
#include "config.h"
#include "idem.h"
#include "oneshot.h"
#include "probe.h"
#include "process.h"
#include "proctitle.h"

#include <stdio.h>
#include <string.h>

int
main(int argc, char **argv)
{
    proctitle_init(argc, argv);
    config_set_dsn_check(idem_dsn_parses); /* the probe judges a dsn for twiced -t */
    if (argc > 1 && strcmp(argv[1], "--worker") == 0) {
        return worker_main(argc, argv);
    }
    if (argc > 1 && strcmp(argv[1], "--probe") == 0) {
        return probe_main(argc, argv, oneshot_child);
    }
    fprintf(stderr, "twiced-worker: twiced starts it for its workers and plugin checks; it is "
                    "not run by hand (see twiced(8))\n");
    return 2;
}
