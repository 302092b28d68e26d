/*
 * test-log.c - the exact lines log.c writes, text and JSON: a message is
 * escaped once and only once, whatever its callers escaped before (issue
 * 14 point 16: libpq's `"127.0.0.1"` and the JSON parser's error text came out as
 * `\"127.0.0.1\"`), and nothing can break a line.
 */
#include "buf.h"
#include "check.h"
#include "escape.h"
#include "jsondoc.h"
#include "log.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char path[64];

/* The last line written, without its timestamp, level, role and pid (text)
 * or as written (JSON); the file is emptied for the next one. */
static char *
last_line(int text)
{
    static char line[4096];
    FILE *f = fopen(path, "r");
    size_t n = f != NULL ? fread(line, 1, sizeof(line) - 1, f) : 0;
    if (f != NULL) {
        fclose(f);
    }
    line[n] = '\0';
    CHECK(n > 0 && line[n - 1] == '\n' && strchr(line, '\n') == line + n - 1);
    if (n > 0) {
        line[n - 1] = '\0';
    }
    CHECK_INT(truncate(path, 0), 0);
    char *rest = strchr(line, ']');
    return text && rest != NULL ? rest + 1 : line;
}

static void
test_text_message_is_escaped_once(void)
{
    log_set_format(LOG_FORMAT_TEXT);
    /* libpq's own words quote the host */
    log_error("idempotency store: connection to server at \"127.0.0.1\", port 1 failed");
    CHECK_STR(last_line(1), ": idempotency store: connection to server at \"127.0.0.1\", "
                            "port 1 failed");
    /* the body parser's error text, already made safe where it was produced */
    char err[256];
    struct jsondoc *v = jsondoc_parse("{\"a\":\"x\\\\y\x01", 11, err, sizeof(err));
    CHECK(v == NULL);
    log_warn("invalid-json: %s", err);
    CHECK_STR(last_line(1), ": invalid-json: line 1 column 11: lexical error: invalid character "
                            "inside string");
    /* a raw control byte, invalid UTF-8 or a line separator never break the line */
    log_info("a\nb\tc\x01\xff\xe2\x80\xa8z \\n stays");
    CHECK_STR(last_line(1), ": a\\nb\\tc\\x01\\xff\\u2028z \\n stays");
    /* text escaped by either escape passes unchanged */
    struct buf b = BUF_INIT;
    escape_text(&b, "q\"\\\n", 4);
    log_info("%s", buf_str(&b));
    CHECK_STR(last_line(1), ": q\\\"\\\\\\n");
    buf_free(&b);
}

static void
test_text_fields_stay_quoted(void)
{
    struct log_job job = {"q1", "m-1", "p", "key with \"quote\"\\", 2};
    log_set_format(LOG_FORMAT_TEXT);
    log_job(TWICE_LOG_INFO, &job, "done in \"%s\"", "x");
    CHECK_STR(last_line(1), " queue=q1 msg=m-1 plugin=p key=\"key with \\\"quote\\\"\\\\\" "
                            "attempt=2: done in \"x\"");
}

static void
test_json_message_is_the_text(void)
{
    log_set_format(LOG_FORMAT_JSON);
    log_error("at \"127.0.0.1\" \\ ok");
    json_error_t jerr;
    json_t *o = json_loads(last_line(0), 0, &jerr);
    CHECK(o != NULL);
    CHECK_STR(json_string_value(json_object_get(o, "msg")), "at \"127.0.0.1\" \\ ok");
    json_decref(o);
    log_set_format(LOG_FORMAT_TEXT);
}

/* The whole file as written (one line expected), emptied for the next one;
 * caller frees. */
static char *
whole_line(size_t *len)
{
    FILE *f = fopen(path, "r");
    char *data = calloc(1, 1 << 20);
    *len = f != NULL && data != NULL ? fread(data, 1, (1 << 20) - 1, f) : 0;
    if (f != NULL) {
        fclose(f);
    }
    CHECK(*len > 0 && data[*len - 1] == '\n' && strchr(data, '\n') == data + *len - 1);
    CHECK_INT(truncate(path, 0), 0);
    return data;
}

/* A message of 100 KB (a body a plugin logs) is cut to one line of at most
 * LOG_LINE_MAX bytes, which a pipe takes in one piece: a longer one could be
 * split by another process's line, and its rest start a line of its own. */
static void
test_long_lines_fit_a_pipe_write(void)
{
    static const char *const fills[] = {"a", "\x01", "\xc3\xa9"}; /* escaped x4; UTF-8 */
    size_t n = 100000, len;
    char *text = malloc(n + 1), note[64];
    for (int fmt = 0; fmt <= 1; fmt++) {
        log_set_format(fmt ? LOG_FORMAT_JSON : LOG_FORMAT_TEXT);
        for (size_t f = 0; f < sizeof(fills) / sizeof(fills[0]); f++) {
            size_t step = strlen(fills[f]);
            for (size_t i = 0; i + step <= n; i += step) {
                memcpy(text + i, fills[f], step);
            }
            text[n - n % step] = '\0';
            log_info("%s", text);
            char *line = whole_line(&len);
            CHECK(len <= LOG_LINE_MAX);
            CHECK(len > LOG_LINE_MAX - 200); /* cut to fit, not much more */
            line[len - 1] = '\0';
            const char *msg = line;
            json_t *o = NULL;
            if (fmt) {
                json_error_t jerr;
                o = json_loads(line, 0, &jerr); /* whole JSON, valid UTF-8 */
                CHECK(o != NULL);
                msg = o != NULL ? json_string_value(json_object_get(o, "msg")) : "";
            }
            const char *cut = msg != NULL ? strstr(msg, " [... ") : NULL;
            CHECK(cut != NULL);
            if (cut != NULL) {
                size_t kept = strlen(text) - strtoul(cut + 6, NULL, 10);
                snprintf(note, sizeof(note), " [... %zu bytes cut]", strlen(text) - kept);
                CHECK_STR(cut, note);
                CHECK(kept % step == 0); /* whole characters */
            }
            json_decref(o);
            free(line);
        }
    }
    free(text);
    log_set_format(LOG_FORMAT_TEXT);
}

/* The pid in a line: the process's own, in a child forked after the parent
 * logged as well (log.c reads it once; twiced -d forks and goes on logging). */
static void
test_text_pid_is_the_process_own(void)
{
    char want[32];
    log_set_format(LOG_FORMAT_TEXT);
    log_info("parent");
    snprintf(want, sizeof(want), "test[%d]: parent", (int) getpid());
    CHECK(strstr(last_line(0), want) != NULL);
    pid_t pid = fork();
    if (pid == 0) {
        log_info("child");
        _exit(0);
    }
    int status = -1;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && status == 0);
    snprintf(want, sizeof(want), "test[%d]: child", (int) pid);
    CHECK(strstr(last_line(0), want) != NULL);
}

int
main(void)
{
    snprintf(path, sizeof(path), "/tmp/twice-test-log.XXXXXX");
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    CHECK_INT(log_open(path), 0);
    log_set_role("test");
    test_text_message_is_escaped_once();
    test_text_fields_stay_quoted();
    test_json_message_is_the_text();
    test_text_pid_is_the_process_own();
    test_long_lines_fit_a_pipe_write();
    log_open(NULL);
    unlink(path);
    return check_done("test-log");
}
