/*
 * test-exec.c - the exec plugin, through the SDK mock host with real
 * handler processes (tests/handlers/behave.py, and the SDK's Python and
 * Node examples): stderr cut into lines (lines.c) and answers parsed
 * (protocol.c) on their own; settings and command refusals; the request
 * line; done, retry and reject answers; a handler that dies, overruns,
 * answers garbage or two lines (killed, restarted, the job retried); a
 * late stray answer never taken as the next job's (message_id echoed); a
 * handler that ends while a child of its holds its stdout seen at once; one
 * that exits after each job costing no job an attempt; a
 * handler whose stderr is redirected kept; one process per running job; one
 * that starts slower than its timeout (start_timeout); a
 * megabyte of stderr that stalls nothing; processes reused, capped, and
 * all gone after fini, none left a zombie. The daemon's acceptance tests
 * are tests/integration/test_exec_plugin.py.
 */
#include "check.h"
#include "test_plugin.h"

#include "exec.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <twice/mock.h>
#include <unistd.h>

#define BEHAVE HANDLERS "/behave.py"

static char dir[64]; /* a private temporary directory */

/* ---- lines.c and protocol.c ---- */

struct seen {
    char lines[8][EXEC_LINE_MAX + 1];
    size_t cut[8];
    int n;
};

static void
collect(void *ctx, const char *line, size_t cut)
{
    struct seen *s = ctx;
    if (s->n < 8) {
        snprintf(s->lines[s->n], sizeof(s->lines[0]), "%s", line);
        s->cut[s->n++] = cut;
    }
}

static void
test_lines(void)
{
    struct exec_lines l = {.len = 0};
    struct seen s = {.n = 0};
    exec_lines_feed(&l, "one\ntw", 6, collect, &s);
    exec_lines_feed(&l,
                    "o\r\nthr\x01"
                    "ee\n\nfour",
                    15, collect, &s);
    CHECK_INT(s.n, 4);
    CHECK_STR(s.lines[0], "one");
    CHECK_STR(s.lines[1], "two");
    CHECK_STR(s.lines[2], "thr?ee");
    CHECK_STR(s.lines[3], "");
    exec_lines_flush(&l, collect, &s);
    CHECK_STR(s.lines[4], "four");

    /* A megabyte without a newline: one line of EXEC_LINE_MAX bytes, the
     * rest counted, nothing buffered beyond it. */
    static char big[1 << 20];
    memset(big, 'z', sizeof(big));
    s.n = 0;
    for (int i = 0; i < 4; i++) {
        exec_lines_feed(&l, big, sizeof(big), collect, &s);
    }
    exec_lines_feed(&l, "\nnext\n", 6, collect, &s);
    CHECK_INT(s.n, 2);
    CHECK_INT(strlen(s.lines[0]), EXEC_LINE_MAX);
    CHECK_INT(s.cut[0], 4 * sizeof(big) - EXEC_LINE_MAX);
    CHECK_STR(s.lines[1], "next");
    CHECK_INT(s.cut[1], 0);

    /* A CR that happens to be the last byte kept of a cut line is no CRLF:
     * it is shown as '?' like any control byte, not dropped uncounted. */
    static char crcut[EXEC_LINE_MAX + 4];
    memset(crcut, 'y', EXEC_LINE_MAX - 1);
    memcpy(crcut + EXEC_LINE_MAX - 1, "\ryz\n", 4);
    s.n = 0;
    exec_lines_feed(&l, crcut, EXEC_LINE_MAX + 3, collect, &s);
    CHECK_INT(s.n, 1);
    CHECK_INT(strlen(s.lines[0]), EXEC_LINE_MAX);
    CHECK_INT(s.lines[0][EXEC_LINE_MAX - 1], '?');
    CHECK_INT(s.cut[0], 2);
}

static void
expect_answer(const char *line, int status, const char *error, long retry_after)
{
    struct exec_answer a;
    char why[512] = "";
    CHECK_INT(exec_parse_answer(line, strlen(line), &a, why, sizeof(why)), 0);
    CHECK_STR(why, "");
    CHECK_INT(a.status, status);
    CHECK_STR(a.error, error);
    CHECK_INT(a.retry_after, retry_after);
}

static void
expect_garbage(const char *line, const char *want)
{
    struct exec_answer a;
    char why[512] = "";
    CHECK_INT(exec_parse_answer(line, strlen(line), &a, why, sizeof(why)), -1);
    CHECK_STR(why, want);
}

static void
test_answers(void)
{
    expect_answer("{\"status\":\"done\"}", TWICE_DONE, "", -1);
    expect_answer(" {\"status\":\"retry\",\"error\":\"busy\",\"retry_after\":7} ", TWICE_RETRY,
                  "busy", 7);
    expect_answer("{\"status\":\"retry\",\"retry_after\":2.9,\"later\":[1]}", TWICE_RETRY, "", 2);
    expect_answer("{\"status\":\"retry\",\"retry_after\":99999999}", TWICE_RETRY, "", 43200);
    expect_answer("{\"status\":\"reject\",\"error\":null}", TWICE_REJECT, "", -1);
    expect_garbage("hello world", "answered something that is not JSON: 'hello world'");
    expect_garbage("[1,2]", "answered JSON that is not an object: '[1,2]'");
    expect_garbage("{\"status\":\"DONE\"}", "answered without a status of \"done\", "
                                            "\"retry\" or \"reject\": '{\"status\":\"DONE\"}'");
    expect_garbage("{}", "answered without a status of \"done\", \"retry\" or "
                         "\"reject\": '{}'");
    expect_garbage("{\"status\":\"done\",\"error\":5}", "answered an error that is not a string: "
                                                        "'{\"status\":\"done\",\"error\":5}'");
    expect_garbage("{\"status\":\"retry\",\"retry_after\":-1}",
                   "answered a retry_after that is not a number of seconds: "
                   "'{\"status\":\"retry\",\"retry_after\":-1}'");
    expect_garbage("{\"status\":\"done\",\"status\":\"reject\"}",
                   "answered JSON with a member named twice: "
                   "'{\"status\":\"done\",\"status\":\"reject\"}'");
    expect_garbage("{\"status\":\"retry\",\"error\":\"a\\u0000b\"}",
                   "answered JSON with \\u0000 in a string: "
                   "'{\"status\":\"retry\",\"error\":\"a\\u0000b\"}'");
    expect_garbage("{\"status\":\"done\",\"message_id\":5}",
                   "answered a message_id that is not a string of at most 255 bytes: "
                   "'{\"status\":\"done\",\"message_id\":5}'");

    /* An echoed message_id names the job answered; without one, any. */
    struct exec_answer a;
    char why[512] = "";
    const char *echo = "{\"status\":\"done\",\"message_id\":\"m-1\"}";
    CHECK_INT(exec_parse_answer(echo, strlen(echo), &a, why, sizeof(why)), 0);
    CHECK_INT(a.echoed, 1);
    CHECK_STR(a.message_id, "m-1");
    CHECK(exec_answer_for(&a, "m-1"));
    CHECK(!exec_answer_for(&a, "m-2"));
    CHECK(!exec_answer_for(&a, "m-10"));
    echo = "{\"status\":\"done\",\"message_id\":null}";
    CHECK_INT(exec_parse_answer(echo, strlen(echo), &a, why, sizeof(why)), 0);
    CHECK_INT(a.echoed, 0);
    CHECK(exec_answer_for(&a, "m-2"));

    /* An error longer than kept is cut between characters: it goes to the
     * log and into twice-error, both UTF-8. */
    char line[4096];
    int at = snprintf(line, sizeof(line), "{\"status\":\"reject\",\"error\":\"");
    for (int i = 0; i < 700; i++) {
        at += snprintf(line + at, sizeof(line) - at, "\xc3\xa9"); /* e acute */
    }
    snprintf(line + at, sizeof(line) - at, "\"}");
    CHECK_INT(exec_parse_answer(line, strlen(line), &a, why, sizeof(why)), 0);
    CHECK_INT(strlen(a.error), 1022);
    CHECK_INT((unsigned char) a.error[1021], 0xa9);
    /* not UTF-8 (Latin-1, say, or binary output): said so, not "not JSON" */
    expect_garbage("{\"status\":\"reject\",\"error\":\"caf\xe9\"}",
                   "answered bytes that are not UTF-8: "
                   "'{\"status\":\"reject\",\"error\":\"caf?\"}'");
    expect_garbage("\x89PNG\x1a\x0a", "answered bytes that are not UTF-8: '?PNG?\?'");

    char shown[EXEC_SHOWN * 2];
    exec_shown("a\x01\xc3\xa9", 4, shown, sizeof(shown));
    CHECK_STR(shown, "a???");
    /* no room: out untouched, or only its NUL */
    shown[0] = 'z';
    exec_shown("abc", 3, shown, 0);
    CHECK_INT(shown[0], 'z');
    exec_shown("abc", 3, shown, 1);
    CHECK_STR(shown, "");
}

/* exec_cmd_parse refuses, blaming setting (NULL: none) with a reason
 * that contains want. */
static void
expect_cmd_error(const char *command, const char *env, const char *pass, const char *d,
                 const char *setting, const char *want)
{
    struct exec_cmd c;
    struct setting_refusal r = {NULL, ""};
    CHECK_INT(exec_cmd_parse(&c, command, env, pass, d, &r), -1);
    CHECK_STR(r.setting != NULL ? r.setting : "(none)", setting != NULL ? setting : "(none)");
    CHECK_CONTAINS(r.why, want);
}

/* The reason exec_cmd_parse gives for env (a static copy). */
static const char *
r_why_of(const char *env)
{
    static char why[sizeof(((struct setting_refusal *) 0)->why)];
    struct exec_cmd c;
    struct setting_refusal r = {NULL, ""};
    CHECK_INT(exec_cmd_parse(&c, "/bin/true", env, "", NULL, &r), -1);
    snprintf(why, sizeof(why), "%s", r.why);
    return why;
}

static void
test_command(void)
{
    struct exec_cmd c;
    struct setting_refusal r = {NULL, ""};
    setenv("TWICE_EXEC_TEST_PASSED", "yes", 1);
    setenv("TWICE_EXEC_TEST_SECRET", "no", 1);
    CHECK_INT(exec_cmd_parse(&c, "  python3 -u  " BEHAVE " \t", "A=1 B=x=y A=2",
                             "TWICE_EXEC_TEST_PASSED NOT_SET_ANYWHERE", "/tmp", &r),
              0);
    CHECK_STR(r.why, "");
    CHECK_STR(c.argv[0], "python3");
    CHECK_STR(c.argv[2], BEHAVE);
    CHECK(c.argv[3] == NULL);
    CHECK_CONTAINS(c.program, "/python3");
    CHECK_STR(c.envp[0], "TWICE_EXEC_TEST_PASSED=yes");
    CHECK_STR(c.envp[1], "A=2");
    CHECK_STR(c.envp[2], "B=x=y");
    CHECK(c.envp[3] == NULL);
    CHECK_STR(c.dir, "/tmp");
    exec_cmd_free(&c);

    CHECK_INT(exec_cmd_parse(&c, "[\"/usr/bin/env\", \"a b\", \"\"]", "{\"X\": \"with blanks\"}",
                             "", NULL, &r),
              0);
    CHECK_STR(c.program, "/usr/bin/env");
    CHECK_STR(c.argv[1], "a b");
    CHECK_STR(c.argv[2], "");
    CHECK_STR(c.envp[0], "X=with blanks");
    CHECK(c.dir == NULL);
    exec_cmd_free(&c);

    expect_cmd_error("", "", "", NULL, "command", "must name a program to run");
    expect_cmd_error("[]", "", "", NULL, "command", "not a JSON array of strings");
    expect_cmd_error("[\"a\", 1]", "", "", NULL, "command",
                     "every element of the array must be a string");
    expect_cmd_error("no-such-program-twice", "", "PATH", NULL, "command",
                     "'no-such-program-twice' is not an executable file in PATH");
    expect_cmd_error(HANDLERS "/../test-exec.c", "", "", NULL, "command", "/test-exec.c: ");
    expect_cmd_error("./behave.py", "", "", "/nonexistent", "directory", "/nonexistent: No such");
    /* where PATH came from, and what a relative program was relative to */
    expect_cmd_error("no-such-program-twice", "", "", NULL, "command",
                     "'no-such-program-twice' is not an executable file in PATH "
                     "(/usr/local/bin:/usr/bin:/bin; "
                     "the default: PATH is neither in 'pass_env' nor set by 'env')");
    expect_cmd_error("python3", "PATH=/nonexistent-twice:bin", "PATH", NULL, "command",
                     "(/nonexistent-twice:bin; set by 'env'); its relative directories are not "
                     "searched");
    CHECK_INT(exec_cmd_parse(&c, "python3", "", "PATH", NULL, &r), 0); /* twiced's PATH */
    exec_cmd_free(&c);
    expect_cmd_error("no-such-program-twice", "", "PATH", NULL, "command",
                     "; twiced's own, passed by 'pass_env')");
    expect_cmd_error("./no-such-handler.py", "", "", HANDLERS, "command",
                     "/no-such-handler.py: No such file or directory (relative to 'directory')");
    expect_cmd_error("/bin/true", "1A=x", "", NULL, "env", "word 1: '1A' is not a variable name");
    expect_cmd_error("/bin/true", "A=1 NOVALUE", "", NULL, "env", "word 2 is not NAME=value");
    /* a value with blanks, or a JSON mistake, never quotes the value */
    expect_cmd_error("/bin/true", "DB_PASSWORD=hunter2 and-more", "", NULL, "env",
                     "word 2 is not NAME=value (it is not shown");
    CHECK(strstr(r_why_of("DB_PASSWORD=hunter2 and-more"), "and-more") == NULL);
    expect_cmd_error("/bin/true", "{\"API_TOKEN\": SuperSecret123}", "", NULL, "env",
                     "invalid JSON at character");
    CHECK(strstr(r_why_of("{\"API_TOKEN\": SuperSecret123}"), "Secret") == NULL);
    expect_cmd_error("/bin/true", "{\"A\": 1}", "", NULL, "env", "'A' must be a string");
    expect_cmd_error("/bin/true", "{\"1A\": \"x\"}", "", NULL, "env", "'1A' is not a variable");
    expect_cmd_error("/bin/true", "{\"A\":", "", NULL, "env", "not a JSON object of strings");
    expect_cmd_error("/bin/true", "", "A-B", NULL, "pass_env", "'A-B' is not a variable name");
    expect_cmd_error(NULL, "", "", NULL, "command", "is not set");
    /* a relative program is found from the working directory */
    CHECK_INT(exec_cmd_parse(&c, "./behave.py", "", "", HANDLERS, &r), 0);
    exec_cmd_free(&c);
}

/* A script whose #! line names an interpreter that is not there (or ends
 * in a carriage return) is refused by name, not left to fail every job
 * with "No such file or directory". */
static void
test_shebang(void)
{
    static const struct {
        const char *text, *want; /* want NULL: accepted */
    } cases[] = {
        {"#!/nonexistent-twice/python4\nprint(1)\n",
         "its interpreter /nonexistent-twice/python4 (the #! line): No such file or directory"},
        {"#!/bin/sh\r\necho\r\n", "its #! line ends in a carriage return"},
        {"#!/etc\n", "its interpreter /etc (the #! line): not an executable file"},
        {"#!/bin/sh\nexit 0\n", NULL},
        {"#! /bin/sh -e\nexit 0\n", NULL},
        {"#!/usr/bin/env sh\nexit 0\n", NULL},
        {"\x7f"
         "ELF not really\n",
         NULL},
    };
    char tmp[] = "/tmp/twice-shebang-XXXXXX", file[64];
    CHECK(mkdtemp(tmp) != NULL);
    snprintf(file, sizeof(file), "%s/h", tmp);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        FILE *f = fopen(file, "w");
        CHECK(f != NULL);
        if (f == NULL) {
            break;
        }
        fputs(cases[i].text, f);
        fclose(f);
        chmod(file, 0755);
        if (cases[i].want != NULL) {
            expect_cmd_error(file, "", "", NULL, "command", cases[i].want);
            continue;
        }
        struct exec_cmd c;
        struct setting_refusal r = {NULL, ""};
        CHECK_INT(exec_cmd_parse(&c, file, "", "", NULL, &r), 0);
        CHECK_STR(r.why, "");
        exec_cmd_free(&c);
    }
    unlink(file);
    rmdir(tmp);
}

/* ---- the plugin through the mock host ---- */

static twice_mock *
new_mock(const char *command)
{
    char echo[128];
    twice_mock *m = plugin_open(PLUGIN_PATH);
    snprintf(echo, sizeof(echo), "{\"ECHO_FILE\": \"%s/echo.json\", \"LANG\": \"C\"}", dir);
    twice_mock_set(m, "command", command);
    twice_mock_set(m, "key", "job:{id}");
    twice_mock_set(m, "env", echo);
    twice_mock_set(m, "directory", dir);
    return m;
}

/* The behave handler with one setting set to value: init refuses that
 * setting's value with want. */
static void
expect_setting_refused(const char *name, const char *value, const char *want)
{
    twice_mock *m = new_mock("python3 " BEHAVE);
    twice_mock_set(m, name, value);
    expect_setting_error(m, name, want);
}

static void
test_settings(void)
{
    expect_setting_error(new_mock("no-such-program-twice"), "command",
                         "'no-such-program-twice' is not an executable file in PATH");
    expect_setting_refused("timeout", "0", "must be 1-86400 seconds");
    expect_setting_refused("start_timeout", "-1", "must be 0-3600 seconds");
    expect_setting_refused("start_timeout", "3601", "must be 0-3600 seconds");
    expect_setting_refused("processes", "-1", "must be 0 (one per running job) to 1024");
    expect_setting_refused("env", "{\"A\":", "not a JSON object");
    expect_setting_refused("directory", "/nonexistent", "/nonexistent: No such file");
    expect_setting_refused("pass_env", "A-B", "'A-B' is not a variable name");
    expect_setting_refused("key", "job:{id", "key template \"job:{id\"");
}

/* A job log line containing s, or NULL. */
static const char *
job_log(twice_mock_job *j, const char *s)
{
    for (size_t i = 0; i < twice_mock_job_log_count(j); i++) {
        const char *t = twice_mock_job_log_text(j, i, NULL);
        if (strstr(t, s) != NULL) {
            return t;
        }
    }
    return NULL;
}

/* The pid a handler wrote to file name of dir ("pid", "child"), or 0. */
static int
read_pid_file(const char *name)
{
    char path[128], text[32] = "";
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    if (f != NULL) {
        if (fgets(text, sizeof(text), f) == NULL) {
            text[0] = '\0';
        }
        fclose(f);
    }
    return atoi(text);
}

/* A job that writes its handler's pid: the status and the pid. */
static twice_status
run_pid(twice_mock *m, const char *what, int *pid, twice_mock_job **out)
{
    char body[256];
    snprintf(body, sizeof(body), "{\"id\":1,%s,\"pid_file\":\"%s/pid\"}", what, dir);
    twice_status st = plugin_run(m, body, out);
    *pid = read_pid_file("pid");
    return st;
}

/* Gone, and not a zombie of ours either (waitpid would find it). */
static int
gone(int pid)
{
    return pid > 0 && kill(pid, 0) != 0 && errno == ESRCH;
}

/* Gone within 2 s: a handler's child, not ours, is reaped by init once
 * killed. */
static int
gone_soon(int pid)
{
    for (int i = 0; i < 100 && !gone(pid); i++) {
        struct timespec t = {0, 20 * 1000000L};
        nanosleep(&t, NULL);
    }
    return gone(pid);
}

static void
test_request_line(twice_mock *m)
{
    twice_mock_job *j = twice_mock_job_new(m, "{\"id\":7,\"do\":\"echo\",\"t\":\"caf\xc3\xa9\"}");
    twice_mock_job_attr(j, "Tenant", NULL, "acme");
    twice_mock_job_attr(j, "Blob", "Binary", "zz");
    twice_mock_job_attr(j, "N", "Number", "12");
    twice_mock_job_attempt(j, 2);
    twice_mock_job_message_id(j, "m-1");
    twice_mock_job_queue(j, "orders");
    CHECK_INT(twice_mock_run(j), TWICE_DONE);
    twice_mock_job_free(j);
    char path[128];
    snprintf(path, sizeof(path), "%s/echo.json", dir);
    json_t *req = json_load_file(path, 0, NULL);
    CHECK(req != NULL);
    CHECK_STR(json_string_value(json_object_get(req, "key")), "job:7");
    CHECK_STR(json_string_value(json_object_get(req, "body")),
              "{\"id\":7,\"do\":\"echo\",\"t\":\"caf\xc3\xa9\"}");
    CHECK_STR(json_string_value(json_object_get(req, "message_id")), "m-1");
    CHECK_INT(json_integer_value(json_object_get(req, "attempt")), 2);
    CHECK_STR(json_string_value(json_object_get(req, "queue")), "orders");
    json_t *attrs = json_object_get(req, "attributes");
    CHECK_INT(json_object_size(attrs), 2);
    CHECK_STR(json_string_value(json_object_get(attrs, "Tenant")), "acme");
    CHECK_STR(json_string_value(json_object_get(attrs, "N")), "12");
    json_decref(req);

    /* Only the environment asked for, and the working directory set. */
    plugin_run(m, "{\"id\":8,\"do\":\"env\"}", &j);
    twice_mock_job_free(j);
    req = json_load_file(path, 0, NULL);
    json_t *env = json_object_get(req, "env");
    CHECK_STR(json_string_value(json_object_get(env, "LANG")), "C");
    CHECK(json_object_get(env, "TWICE_EXEC_TEST_SECRET") == NULL);
    CHECK(json_object_get(env, "HOME") == NULL);
    CHECK_STR(json_string_value(json_object_get(req, "cwd")), dir);
    json_decref(req);
}

static void
test_answers_through(twice_mock *m)
{
    twice_mock_job *j;
    CHECK_INT(plugin_run(m, "{\"id\":1,\"do\":\"reject\"}", &j), TWICE_REJECT);
    CHECK_STR(twice_mock_job_error(j), "no such customer");
    twice_mock_job_free(j);
    CHECK_INT(plugin_run(m, "{\"id\":1,\"do\":\"retry\"}", &j), TWICE_RETRY);
    CHECK_STR(twice_mock_job_error(j), "busy");
    CHECK_INT(twice_mock_job_retry_after(j), 7);
    twice_mock_job_free(j);
}

/* Death, garbage and overruns: the job retried with why, the process
 * replaced (a new pid), the old one reaped. */
static void
test_failures(twice_mock *m)
{
    twice_mock_job *j;
    int pid, before;
    CHECK_INT(run_pid(m, "\"do\":\"ok\"", &before, &j), TWICE_DONE);
    twice_mock_job_free(j);
    CHECK_INT(run_pid(m, "\"do\":\"ok\"", &pid, &j), TWICE_DONE);
    CHECK_INT(pid, before); /* kept for many jobs */
    twice_mock_job_free(j);

    CHECK_INT(run_pid(m, "\"do\":\"die\"", &pid, &j), TWICE_RETRY);
    CHECK_CONTAINS(twice_mock_job_error(j), "exited with status 3 before answering");
    CHECK(gone(pid));
    twice_mock_job_free(j);

    CHECK_INT(run_pid(m, "\"do\":\"garbage\"", &before, &j), TWICE_RETRY);
    char want[160]; /* named by its pid, as every other failure of a handler */
    snprintf(want, sizeof(want),
             "handler %d answered something that is not JSON: "
             "'this is not JSON'",
             before);
    CHECK_STR(twice_mock_job_error(j), want);
    CHECK(before != pid && gone(before));
    twice_mock_job_free(j);

    /* Two lines that both name this job: the answer stands, the process
     * is restarted. */
    CHECK_INT(run_pid(m, "\"do\":\"two_lines\"", &pid, &j), TWICE_DONE);
    CHECK(job_log(j, "wrote more than one line for one request") != NULL);
    CHECK(gone(pid));
    twice_mock_job_free(j);

    CHECK_INT(run_pid(m, "\"do\":\"ok\"", &before, &j), TWICE_DONE); /* restarted */
    CHECK(before != pid);
    twice_mock_job_free(j);

    /* It closed its stdout and went on: the SIGKILL is ours, not its end. */
    CHECK_INT(run_pid(m, "\"do\":\"close_stdout\"", &pid, &j), TWICE_RETRY);
    CHECK_CONTAINS(twice_mock_job_error(j),
                   "closed its stdout and went on running (killed) before answering");
    CHECK(gone(pid));
    twice_mock_job_free(j);

    /* It wrote its answer without the newline and exited: told so. */
    CHECK_INT(run_pid(m, "\"do\":\"no_newline\",\"exit_after\":1", &pid, &j), TWICE_RETRY);
    CHECK_CONTAINS(twice_mock_job_error(j), "exited with status 0 before answering; it wrote "
                                            "'{\"status\": \"done\"");
    CHECK_CONTAINS(twice_mock_job_error(j), "' without the newline that ends an answer");
    CHECK(gone(pid));
    twice_mock_job_free(j);
}

/* Whether pidfds work here: the plugin watches a handler's end through one;
 * without (before Linux 5.3, or under valgrind) it sees only EOF, as before. */
static int
have_pidfd(void)
{
#ifdef SYS_pidfd_open
    int fd = (int) syscall(SYS_pidfd_open, getpid(), 0);
    if (fd >= 0) {
        close(fd);
        return 1;
    }
#endif
    return 0;
}

/* The pidfd part of test_death_with_a_child: dying before answering, and
 * while idle after an answer. */
static void
handler_ends_with_a_child(twice_mock *m)
{
    twice_mock_job *j;
    char what[256];
    int pid, again;
    snprintf(what, sizeof(what),
             "\"do\":\"die\",\"background\":60,\"child_pid_file\":\"%s/child\"", dir);
    time_t t0 = time(NULL);
    CHECK_INT(run_pid(m, what, &pid, &j), TWICE_RETRY);
    CHECK_CONTAINS(twice_mock_job_error(j), "exited with status 3 before answering");
    CHECK(time(NULL) - t0 < 20); /* not the 60 s of timeout and start_timeout */
    CHECK(gone(pid));
    CHECK(gone_soon(read_pid_file("child")));
    twice_mock_job_free(j);

    snprintf(what, sizeof(what),
             "\"do\":\"ok\",\"exit_after\":1,\"background\":60,\"child_pid_file\":\"%s/child\"",
             dir);
    CHECK_INT(run_pid(m, what, &pid, &j), TWICE_DONE);
    twice_mock_job_free(j);
    struct timespec idle = {0, 500 * 1000000L}; /* the supervisor sees it end */
    nanosleep(&idle, NULL);
    t0 = time(NULL);
    CHECK_INT(run_pid(m, "\"do\":\"ok\"", &again, &j), TWICE_DONE);
    CHECK(time(NULL) - t0 < 20);
    CHECK(again != pid && gone(pid));
    CHECK(gone_soon(read_pid_file("child")));
    twice_mock_job_free(j);
}

/* A handler that ends while a child it started (a helper) still holds
 * its stdout: its end is seen at once, not at the timeout, whether it
 * dies before answering (the job retried with its exit status) or while
 * idle after an answer (the next job gets a new process and succeeds);
 * the child, in its process group, is killed with it, and at fini too
 * when the handler itself ends at EOF. */
static void
test_death_with_a_child(void)
{
    twice_mock *m = new_mock("python3 -u " BEHAVE);
    twice_mock_set(m, "timeout", "30");
    CHECK_INT(twice_mock_init(m), 0);
    twice_mock_job *j;
    char what[256];
    int pid;
    if (have_pidfd()) {
        handler_ends_with_a_child(m);
    } else {
        fprintf(stderr, "test-exec: no pidfd here (valgrind does not know pidfd_open): a "
                        "handler's end while its child holds stdout is not checked\n");
    }
    /* fini: the handler ends at EOF, its helper would outlive the worker */
    snprintf(what, sizeof(what), "\"do\":\"ok\",\"background\":60,\"child_pid_file\":\"%s/child\"",
             dir);
    CHECK_INT(run_pid(m, what, &pid, &j), TWICE_DONE);
    twice_mock_job_free(j);
    twice_mock_free(m);
    CHECK(gone(pid));
    CHECK(gone_soon(read_pid_file("child")));
}

/* A late second answer of one job, read when the next job waits for its
 * answer: never taken as the next job's. The handler echoes message_id:
 * the stray line names the earlier job, the process is restarted and the
 * next job retried, then rejected by a new process as it would have been. */
static void
test_stray_answer(twice_mock *m)
{
    twice_mock_job *j;
    int first, pid;
    CHECK_INT(run_pid(m, "\"do\":\"stray\"", &first, &j), TWICE_DONE);
    twice_mock_job_free(j);
    j = twice_mock_job_new(m, "{\"id\":2,\"do\":\"reject\"}");
    twice_mock_job_message_id(j, "second-message");
    CHECK_INT(twice_mock_run(j), TWICE_RETRY);
    CHECK_CONTAINS(twice_mock_job_error(j), "answered for another job (message_id 'mock-message-");
    CHECK_CONTAINS(twice_mock_job_error(j), "not this job's 'second-message'; restarted)");
    twice_mock_job_free(j);
    CHECK(gone(first));
    CHECK_INT(run_pid(m, "\"do\":\"reject\"", &pid, &j), TWICE_REJECT);
    CHECK(pid != first);
    twice_mock_job_free(j);
}

/* A handler that does not echo message_id and writes two lines for one
 * job: which line answers it is unknown, so the job is retried (taking the
 * first could delete a message never handled), the process restarted. */
static void
test_two_lines_without_echo(void)
{
    twice_mock *m = new_mock("python3 -u " BEHAVE);
    char env[160];
    snprintf(env, sizeof(env), "{\"ECHO_ID\": \"0\", \"LANG\": \"C\"}");
    twice_mock_set(m, "env", env);
    CHECK_INT(twice_mock_init(m), 0);
    twice_mock_job *j;
    int pid, again;
    CHECK_INT(run_pid(m, "\"do\":\"ok\"", &pid, &j), TWICE_DONE); /* no echo: trusted */
    twice_mock_job_free(j);
    CHECK_INT(run_pid(m, "\"do\":\"two_lines\"", &again, &j), TWICE_RETRY);
    CHECK_INT(again, pid);
    CHECK_CONTAINS(twice_mock_job_error(j), "wrote more than one line for one request (which one "
                                            "answers this job is unknown");
    CHECK(gone(pid));
    twice_mock_job_free(j);
    twice_mock_free(m);
}

/* A handler whose stderr is redirected by its wrapper (`exec python3
 * h.py 2>>own.log`): EOF on the stderr pipe is no death. Its jobs run in
 * one process, with time between them for the supervisor to look. */
/* A handler that never reads its standard input: it answers at once (or
 * writes a line longer than any answer) while a request larger than the
 * socket's buffers is still being sent, or exits. Nothing may wait on
 * the other for ever, and the job is never taken as done. */
static void
test_never_reads(void)
{
    static const char *const cmds[] = {
        "[\"/bin/sh\", \"-c\", \"sleep 0.2; echo '{\\\"status\\\":\\\"done\\\"}'; exec sleep "
        "30\"]",
        "[\"/bin/sh\", \"-c\", \"head -c 300000 /dev/zero | tr '\\\\\\\\0' x; exec sleep 30\"]",
        "[\"/bin/sh\", \"-c\", \"exit 0\"]",
    };
    static const char *const wants[] = {
        "wrote to its stdout before reading its whole request (a handler reads the request's "
        "line, then answers; restarted)",
        "wrote to its stdout before reading its whole request",
        "exited with status 0 before reading the request (restarted)",
    };
    size_t n = 2 * 1024 * 1024;
    char *body = malloc(n + 64);
    CHECK(body != NULL);
    if (body == NULL) {
        return;
    }
    int off = snprintf(body, 64, "{\"id\":1,\"pad\":\"");
    memset(body + off, 'p', n);
    snprintf(body + off + n, 64, "\"}");
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
        twice_mock *m = new_mock(cmds[i]);
        twice_mock_set(m, "timeout", "3");
        twice_mock_set(m, "start_timeout", "0");
        CHECK_INT(twice_mock_init(m), 0);
        twice_mock_job *j;
        twice_status st = plugin_run(m, body, &j);
        CHECK_INT(st, TWICE_RETRY);
        CHECK_CONTAINS(twice_mock_job_error(j), wants[i]);
        CHECK(twice_mock_job_error(j) == NULL ||
              strstr(twice_mock_job_error(j), "did not answer within") == NULL);
        twice_mock_job_free(j);
        twice_mock_free(m);
    }
    free(body);
}

static void
test_stderr_redirected(void)
{
    char command[512];
    snprintf(command, sizeof(command),
             "[\"/bin/sh\", \"-c\", \"exec python3 -u %s 2>>%s/own.log\"]", BEHAVE, dir);
    twice_mock *m = new_mock(command);
    CHECK_INT(twice_mock_init(m), 0);
    twice_mock_job *j;
    int first, pid;
    CHECK_INT(run_pid(m, "\"do\":\"ok\"", &first, &j), TWICE_DONE);
    twice_mock_job_free(j);
    for (int i = 0; i < 3; i++) {
        struct timespec t = {0, 300 * 1000000L};
        nanosleep(&t, NULL);
        CHECK_INT(run_pid(m, "\"do\":\"ok\"", &pid, &j), TWICE_DONE);
        CHECK_INT(pid, first);
        twice_mock_job_free(j);
    }
    twice_mock_free(m);
    CHECK(gone(first));
}

/* A slow reader of the mock's stderr, where it writes what the
 * supervisor logs outside any job: 4 KiB a millisecond, discarded. */
static void *
slow_reader(void *arg)
{
    char buf[4096];
    int fd = *(int *) arg;
    struct timespec t = {0, 1000000L};
    while (read(fd, buf, sizeof(buf)) > 0) {
        nanosleep(&t, NULL);
    }
    return NULL;
}

/* fd 2 to a pipe read slowly by a thread (a slow log: the supervisor's
 * rounds of reading an idle handler's stderr take a while); the saved
 * fd 2 in saved[0], the pipe's read end in saved[1]. 0, or -1. */
static int
slow_stderr(int saved[2], pthread_t *t)
{
    int fds[2];
    if (pipe(fds) != 0) {
        return -1;
    }
    fflush(stderr);
    saved[0] = dup(2);
    saved[1] = fds[0];
    dup2(fds[1], 2);
    close(fds[1]);
    if (pthread_create(t, NULL, slow_reader, &saved[1]) != 0) {
        dup2(saved[0], 2);
        close(saved[0]);
        close(fds[0]);
        return -1;
    }
    return 0;
}

static void
normal_stderr(int saved[2], pthread_t t)
{
    fflush(stderr);
    dup2(saved[0], 2); /* the pipe's last write end closed: the reader ends */
    close(saved[0]);
    pthread_join(t, NULL);
    close(saved[1]);
}

/* processes = 0, one job at a time, each handler logging a lot to stderr
 * after its answer (the supervisor reading it, slowly, when the next job
 * comes): one process does them all, never more processes than running
 * jobs. */
static void
test_one_job_one_process(void)
{
    twice_mock *m = new_mock("python3 -u " BEHAVE);
    CHECK_INT(twice_mock_init(m), 0);
    twice_mock_job *j;
    int pids[21], done = 0, saved[2];
    pthread_t reader;
    CHECK_INT(slow_stderr(saved, &reader), 0);
    for (int i = 0; i < 21; i++) {
        struct timespec t = {0, 20 * 1000000L};
        nanosleep(&t, NULL);
        done += run_pid(m, "\"do\":\"ok\",\"stderr_after\":200000", &pids[i], &j) == TWICE_DONE;
        twice_mock_job_free(j);
    }
    twice_mock_free(m);
    normal_stderr(saved, reader);
    CHECK_INT(done, 21);
    for (int i = 1; i < 21; i++) {
        CHECK_INT(pids[i], pids[0]);
    }
}

/* A handler that overruns the timeout: killed, reaped, the job retried, and
 * the next job answered by a new process. A mock of its own with a short
 * timeout, so that the other jobs are not held to it: on a loaded machine
 * (CI under a sanitizer) a fresh interpreter can take seconds to start. */
static void
test_overrun(void)
{
    twice_mock *m = new_mock("python3 -u " BEHAVE);
    twice_mock_set(m, "timeout", "1");
    CHECK_INT(twice_mock_init(m), 0);
    twice_mock_job *j;
    int pid, tries = 0;
    twice_status st;
    do { /* until the interpreter is up: its start counts against the timeout */
        st = plugin_run(m, "{\"id\":1,\"do\":\"ok\"}", &j);
        twice_mock_job_free(j);
    } while (st != TWICE_DONE && ++tries < 20);
    CHECK_INT(st, TWICE_DONE);
    CHECK_INT(run_pid(m, "\"do\":\"sleep\",\"seconds\":30", &pid, &j), TWICE_RETRY);
    CHECK_CONTAINS(twice_mock_job_error(j), "did not answer within 1 s (killed)");
    CHECK(gone(pid));
    twice_mock_job_free(j);
    /* an answer written without its newline is named, not only the overrun
     * (on a process that answered once: no start_timeout to wait for) */
    CHECK_INT(plugin_run(m, "{\"id\":1,\"do\":\"ok\"}", &j), TWICE_DONE);
    twice_mock_job_free(j);
    CHECK_INT(plugin_run(m, "{\"id\":1,\"do\":\"no_newline\"}", &j), TWICE_RETRY);
    CHECK_CONTAINS(twice_mock_job_error(j),
                   "did not answer within 1 s (killed); it wrote '{\"status\": \"done\", "
                   "\"message_id\": ");
    CHECK_CONTAINS(twice_mock_job_error(j), "' without the newline that ends an answer");
    twice_mock_job_free(j);
    twice_mock_free(m);
}

/* A handler that sleeps START_DELAY seconds before its first job, with a
 * timeout of 1 s and start_timeout seconds more for a new process. */
static twice_mock *
slow_start_mock(const char *start_timeout)
{
    char env[160];
    twice_mock *m = new_mock("python3 -u " BEHAVE);
    snprintf(env, sizeof(env), "{\"START_DELAY\": \"2\", \"LANG\": \"C\"}");
    twice_mock_set(m, "env", env);
    twice_mock_set(m, "timeout", "1");
    twice_mock_set(m, "start_timeout", start_timeout);
    CHECK_INT(twice_mock_init(m), 0);
    return m;
}

/* A handler that starts slower than its timeout: without start_timeout it
 * is killed on every first job and never answers one; with it, its first
 * job (and the first of every process restarted) gets the allowance, and
 * later jobs are held to the timeout alone. */
static void
test_slow_start(void)
{
    twice_mock *m = slow_start_mock("0");
    twice_mock_job *j;
    for (int i = 0; i < 2; i++) { /* each restart starts slowly again */
        CHECK_INT(plugin_run(m, "{\"id\":1,\"do\":\"ok\"}", &j), TWICE_RETRY);
        CHECK_CONTAINS(twice_mock_job_error(j), "did not answer within 1 s (killed)");
        twice_mock_job_free(j);
    }
    twice_mock_free(m);

    m = slow_start_mock("30");
    int pid, again;
    CHECK_INT(run_pid(m, "\"do\":\"ok\"", &pid, &j), TWICE_DONE);
    twice_mock_job_free(j);
    CHECK_INT(run_pid(m, "\"do\":\"sleep\",\"seconds\":0.2", &again, &j), TWICE_DONE);
    CHECK_INT(again, pid);
    twice_mock_job_free(j);
    CHECK_INT(run_pid(m, "\"do\":\"sleep\",\"seconds\":3", &again, &j), TWICE_RETRY);
    CHECK_CONTAINS(twice_mock_job_error(j), "did not answer within 1 s (killed)");
    CHECK(again == pid && gone(pid));
    twice_mock_job_free(j);
    CHECK_INT(run_pid(m, "\"do\":\"ok\"", &again, &j), TWICE_DONE);
    CHECK(again > 0 && again != pid);
    twice_mock_job_free(j);
    twice_mock_free(m);

    /* A new process that overruns timeout + start_timeout: killed, and said so.
     * 4 s, not 2: it writes its pid after its 2 s start, and on a loaded
     * machine a kill at 3 s could come before it wrote it. */
    m = slow_start_mock("4");
    CHECK_INT(run_pid(m, "\"do\":\"sleep\",\"seconds\":30", &pid, &j), TWICE_RETRY);
    CHECK_CONTAINS(twice_mock_job_error(j),
                   "did not answer within 5 s (timeout 1 s + start_timeout 4 s of a new "
                   "process; killed)");
    CHECK(gone(pid));
    twice_mock_job_free(j);
    twice_mock_free(m);
}

/* A megabyte of stderr while the job runs: logged with the job's context,
 * and the job is answered in seconds. */
static void
test_stderr(twice_mock *m)
{
    twice_mock_job *j;
    time_t t0 = time(NULL);
    CHECK_INT(plugin_run(m, "{\"id\":5,\"do\":\"stderr\",\"bytes\":1048576}", &j), TWICE_DONE);
    CHECK(time(NULL) - t0 < 20);
    CHECK(twice_mock_job_log_count(j) >= 10000);
    const char *line = job_log(j, "stderr: xxxx");
    CHECK(line != NULL);
    twice_mock_job_free(j);
    CHECK_INT(plugin_run(m, "{\"id\":6,\"do\":\"long_line\",\"bytes\":100000}", &j), TWICE_DONE);
    CHECK(job_log(j, "[96928 more bytes of this line cut]") != NULL);
    twice_mock_job_free(j);
}

static void
short_job(char *buf, size_t cap, const void *ctx, int t, int i)
{
    (void) ctx;
    snprintf(buf, cap, "{\"id\":%d,\"do\":\"sleep\",\"seconds\":0.05}", 100 * t + i);
}

/* Jobs on 4 threads at once, with processes capped at 2: they wait their
 * turn and all succeed. */
static void
test_concurrency(void)
{
    twice_mock *m = new_mock("python3 -u " BEHAVE);
    twice_mock_set(m, "processes", "2");
    CHECK_INT(twice_mock_init(m), 0);
    CHECK_INT(plugin_run_threads(m, 4, 6, short_job, NULL), 0);
    twice_mock_free(m);
}

static void
one_shot_job(char *buf, size_t cap, const void *ctx, int t, int i)
{
    (void) ctx;
    snprintf(buf, cap, "{\"id\":%d,\"do\":\"ok\",\"exit_after\":1}", 100 * t + i);
}

/* A handler that exits after each job, on 3 threads at once with 2
 * processes: a job given to a process between its answer and its exit
 * never reaches it, and goes to another at no cost: every job DONE at
 * once, none retried. */
static void
test_one_shot(void)
{
    twice_mock *m = new_mock("python3 -u " BEHAVE);
    twice_mock_set(m, "processes", "2");
    CHECK_INT(twice_mock_init(m), 0);
    CHECK_INT(plugin_run_threads(m, 3, 5, one_shot_job, NULL), 0);
    twice_mock_free(m);
}

/* The SDK's examples, as handler authors will start from them. */
static void
test_example(const char *command)
{
    char log[128], line[256];
    snprintf(log, sizeof(log), "%s/orders.log", dir);
    unlink(log);
    twice_mock *m = new_mock(command);
    twice_mock_set(m, "key", "order:{orderId}");
    CHECK_INT(twice_mock_init(m), 0);
    twice_mock_job *j;
    CHECK_INT(plugin_run(m, "{\"orderId\":1,\"amount\":5,\"quantity\":3}", &j), TWICE_DONE);
    twice_mock_job_free(j);
    CHECK_INT(plugin_run(m, "{\"orderId\":2,\"amount\":\"lots\"}", &j), TWICE_REJECT);
    CHECK_CONTAINS(twice_mock_job_error(j), "bad order");
    twice_mock_job_free(j);
    CHECK_INT(plugin_run(m, "{\"orderId\":3,\"amount\":2}", &j), TWICE_DONE);
    twice_mock_job_free(j);
    twice_mock_free(m);
    FILE *f = fopen(log, "r");
    CHECK(f != NULL);
    if (f != NULL) {
        CHECK(fgets(line, sizeof(line), f) != NULL);
        CHECK_STR(line, "order:1 15\n");
        CHECK(fgets(line, sizeof(line), f) != NULL);
        CHECK_STR(line, "order:3 2\n");
        fclose(f);
    }
}

int
main(void)
{
    test_lines();
    test_answers();
    test_command();
    test_shebang();
    snprintf(dir, sizeof(dir), "/tmp/test-exec-XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
    test_settings();

    twice_mock *m = new_mock("python3 -u " BEHAVE);
    twice_mock_set(m, "timeout", "60");
    CHECK_INT(twice_mock_init(m), 0);
    test_request_line(m);
    test_answers_through(m);
    test_failures(m);
    test_stray_answer(m);
    test_death_with_a_child();
    test_stderr(m);
    test_overrun();
    test_slow_start();
    int pid;
    twice_mock_job *j;
    run_pid(m, "\"do\":\"ok\"", &pid, &j);
    twice_mock_job_free(j);
    twice_mock_free(m); /* fini: every process ended and reaped */
    CHECK(gone(pid));

    test_concurrency();
    test_one_shot();
    test_two_lines_without_echo();
    test_stderr_redirected();
    test_never_reads();
    test_one_job_one_process();
    test_example("python3 " EXAMPLES "/exec-handler.py");
    if (access("/usr/bin/node", X_OK) == 0) {
        test_example("/usr/bin/node " EXAMPLES "/exec-handler.js");
    } else {
        fprintf(stderr, "test-exec: no /usr/bin/node: the Node example is not run\n");
    }
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    CHECK_INT(system(cmd), 0);
    return check_done("test-exec");
}
