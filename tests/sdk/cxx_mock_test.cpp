/*
 * cxx_mock_test.cpp - a C++ team's unit test of its plugin against the
 * SDK's mock host (<twice/mock.h>, libtwice-mock.a): built and run by
 * check-cxx.py with the plugin file as its argument.
 */
#include <cstdio>
#include <string>

#include <twice/mock.h>

int
main(int argc, char **argv)
{
    char err[256];
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s PLUGIN.so\n", argv[0]);
        return 2;
    }
    twice_mock *m = twice_mock_open(argv[1], err, sizeof(err));
    if (m == nullptr || twice_mock_set(m, "greeting", "Hi") != 0 || twice_mock_init(m) != 0) {
        std::fprintf(stderr, "%s\n", m == nullptr ? err : twice_mock_error(m));
        return 1;
    }
    int failed = 0;
    twice_mock_job *j = twice_mock_job_new(m, "{\"id\":42,\"name\":\"Ana\"}");
    twice_status st = twice_mock_run(j);
    const char *key = twice_mock_job_key(j);
    const char *log =
        twice_mock_job_log_count(j) > 0 ? twice_mock_job_log_text(j, 0, nullptr) : "";
    if (st != TWICE_DONE || key == nullptr || std::string(key) != "cxx:42" ||
        std::string(log).find("Hi, Ana") == std::string::npos) {
        std::fprintf(stderr, "job 1: status %d, key %s, log '%s'\n", (int) st,
                     key != nullptr ? key : "(none)", log);
        failed = 1;
    }
    twice_mock_job_free(j);
    j = twice_mock_job_new(m, "{\"id\":43}");
    if (twice_mock_run(j) != TWICE_REJECT) {
        std::fprintf(stderr, "job 2: a message without a name was not rejected\n");
        failed = 1;
    }
    twice_mock_job_free(j);
    twice_mock_free(m);
    std::printf("%s\n", failed ? "FAILED" : "ok");
    return failed;
}
