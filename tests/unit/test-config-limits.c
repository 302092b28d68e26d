/*
 * test-config-limits.c - a configuration as text, before its settings: a
 * NUL byte anywhere (the file or an @include'd one) is refused at its line,
 * a byte order mark (UTF-8's, UTF-16's) at line 1,
 * and so is a file past CONFIG_MAX_BYTES (/dev/zero included), a group or a
 * list past CONFIG_MAX_ENTRIES, an @include that could block, an integer
 * libconfig would truncate; past
 * DIAG_MAX_LINES problems the last line counts the rest. Every reader (a
 * file, its text, a snapshot fd) refuses the same. Not for the settings
 * (test-config.c).
 */
#include "buf.h"
#include "check.h"
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[256];
static char plugin[300]; /* an empty file the configurations name as their plugin */

#define VALID_HEAD                                                                                \
    "idempotency = { dsn = \"dbname=twice\"; };\n"                                                \
    "plugins = ( { name = \"a\"; path = \"%s\"; } );\n"                                           \
    "queues = ( { name = \"q\"; url = \"http://h/0/q\"; dlq_url = \"http://h/0/q-dlq\";\n"        \
    "  plugin = \"a\"; } );\n"

static const char *
path_in(const char *name)
{
    static char p[4][512];
    static int next;
    char *out = p[next++ % 4];
    snprintf(out, sizeof(p[0]), "%s/%s", tmpdir, name);
    return out;
}

static void
write_bytes(const char *path, const char *data, size_t len)
{
    FILE *fp = fopen(path, "w");
    CHECK(fp != NULL);
    if (fp != NULL) {
        CHECK_INT(fwrite(data, 1, len, fp), len);
        fclose(fp);
    }
}

/* A valid configuration, then extra bytes (NULs allowed: len counts them). */
static size_t
valid_plus(char *out, size_t cap, const char *extra, size_t extra_len)
{
    int n = snprintf(out, cap, VALID_HEAD, plugin);
    memcpy(out + n, extra, extra_len);
    out[(size_t) n + extra_len] = '\0';
    return (size_t) n + extra_len;
}

/* Load path from the file; expect exactly one problem, equal to want. */
static void
expect_refused(const char *path, const char *want)
{
    struct diag d = DIAG_INIT;
    struct config *c = (struct config *) 1;
    CHECK_INT(config_load(path, NULL, &c, &d), -1);
    CHECK(c == NULL);
    CHECK_INT(d.n, 1);
    for (size_t i = 0; i < d.n; i++) {
        CHECK_STR(d.lines[i], want);
    }
    diag_free(&d);
}

static void
expect_loads(const char *path)
{
    struct diag d = DIAG_INIT;
    struct config *c = NULL;
    CHECK_INT(config_load(path, NULL, &c, &d), 0);
    for (size_t i = 0; i < d.n; i++) {
        fprintf(stderr, "  unexpected: %s\n", d.lines[i]);
    }
    config_free(c);
    diag_free(&d);
}

#define NUL_MSG                                                                                   \
    "a NUL byte: a configuration is text (is the file damaged, or zero-filled after a crash?); "  \
    "nothing of it was used"

/* A valid file, a NUL, then more settings used to pass `twiced -t`
 * with the tail ignored. A NUL anywhere is refused at its line. */
static void
test_nul(void)
{
    static const struct {
        const char *extra;
        size_t len;
        int line;      /* of the NUL, counted from VALID_HEAD's 4 lines */
        int prefix_ok; /* the text before the NUL is a valid configuration */
    } cases[] = {
        {"\0workers = 999;\n", 16, 5, 1},             /* between settings: the tail was ignored */
        {"\n\n\0", 3, 7, 1},                          /* the last byte */
        {"log = { file = \"/x\0y\"; };\n", 26, 5, 0}, /* inside a string: it was cut */
        {"# a comment \0 here\nworkers = 3;\n", 32, 5, 0},
        {"/* a\n comment \0 */\n", 19, 6, 0},
    };
    const char *file = path_in("nul.conf");
    char text[4096], want[1024];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t n = valid_plus(text, sizeof(text), cases[i].extra, cases[i].len);
        write_bytes(file, text, n);
        snprintf(want, sizeof(want), "%s:%d: " NUL_MSG, file, cases[i].line);
        expect_refused(file, want);
        if (cases[i].prefix_ok) {
            write_bytes(file, text, strlen(text)); /* up to the NUL: fine */
            expect_loads(file);
        }
    }
    /* A NUL first, in an empty-looking file. */
    write_bytes(file, "\0\0\0\0", 4);
    snprintf(want, sizeof(want), "%s:1: " NUL_MSG, file);
    expect_refused(file, want);
}

/* The readers every process uses: a pipe (twiced -t -c <(...)) and the
 * master's snapshot memfd refuse the same way, naming what they were told. */
static void
test_nul_fd(void)
{
    static const char bytes[] = "workers = 2;\n\nlog = {};\0\n";
    int p[2];
    CHECK(pipe(p) == 0);
    CHECK_INT(write(p[1], bytes, sizeof(bytes) - 1), sizeof(bytes) - 1);
    close(p[1]);
    struct diag d = DIAG_INIT;
    char *text = (char *) 1;
    size_t len = 0;
    CHECK_INT(config_text_read(p[0], "/etc/twice/twice.conf", &text, &len, &d), -1);
    close(p[0]);
    CHECK_INT(d.n, 1);
    if (d.n == 1) {
        CHECK_STR(d.lines[0], "/etc/twice/twice.conf:3: " NUL_MSG);
    }
    diag_free(&d);

    int fd = memfd_create("t", MFD_CLOEXEC);
    CHECK_INT(write(fd, bytes, 13), 13); /* the first line only: read whole */
    CHECK_INT(config_text_read(fd, "snap", &text, &len, &d), 0);
    CHECK_INT(len, 13);
    CHECK(text != (char *) 1 && strcmp(text, "workers = 2;\n") == 0);
    CHECK_INT(d.n, 0);
    free(text);
    close(fd);
}

/* An @include'd file with a NUL is refused at its own line, and the main
 * file's settings are not used either. */
static void
test_nul_include(void)
{
    char text[4096], want[1024];
    const char *inc = path_in("nul.inc");
    write_bytes(inc, "# included\nworkers = 3;\0drain_timeout = 1;\n", 43);
    size_t n = valid_plus(text, sizeof(text), "@include \"nul.inc\"\n", 19);
    const char *file = path_in("nul-main.conf");
    write_bytes(file, text, n);
    snprintf(want, sizeof(want), "%s:2: " NUL_MSG, inc);
    expect_refused(file, want);
    /* also when the text comes from the caller (a worker's snapshot) */
    struct diag d = DIAG_INIT;
    struct config *c = NULL;
    CHECK_INT(config_load(file, text, &c, &d), -1);
    CHECK_INT(d.n, 1);
    if (d.n == 1) {
        CHECK_STR(d.lines[0], want);
    }
    diag_free(&d);
    unlink(inc);
    unlink(file);
}

#define BOM_MSG                                                                                   \
    "a byte order mark (the bytes EF BB BF) starts the file, which twice does not read: save it " \
    "as UTF-8 without a BOM"
#define UTF16_MSG                                                                                 \
    "UTF-16 text (it starts with the byte order mark %s): a configuration is UTF-8 or ASCII; "    \
    "save it as UTF-8 without a BOM"

/* A file a Windows editor saved: UTF-8 with a byte order mark was a bare
 * "syntax error" at line 1, UTF-16 "a NUL byte ... damaged". Either is
 * refused at line 1 saying what it is, in the file and in an @include. */
static void
test_bom(void)
{
    char text[4096], want[1024], u16[8192];
    const char *file = path_in("bom.conf");
    text[0] = '\xef', text[1] = '\xbb', text[2] = '\xbf';
    size_t n = 3 + valid_plus(text + 3, sizeof(text) - 3, "", 0);
    write_bytes(file, text, n);
    snprintf(want, sizeof(want), "%s:1: " BOM_MSG, file);
    expect_refused(file, want);
    write_bytes(file, text + 3, n - 3); /* without it: fine */
    expect_loads(file);
    /* the same text as UTF-16, little and big endian, each with its mark */
    for (int be = 0; be <= 1; be++) {
        u16[0] = be ? '\xfe' : '\xff', u16[1] = be ? '\xff' : '\xfe';
        for (size_t i = 3; i < n; i++) {
            u16[2 * (i - 2) + (size_t) be] = text[i], u16[2 * (i - 2) + (size_t) !be] = '\0';
        }
        write_bytes(file, u16, 2 * (n - 2));
        snprintf(want, sizeof(want), "%s:1: " UTF16_MSG, file, be ? "FE FF" : "FF FE");
        expect_refused(file, want);
    }
    /* in an @include'd file: named at its own line 1 */
    const char *inc = path_in("bom.inc");
    write_bytes(inc, "\xef\xbb\xbfworkers = 3;\n", 16);
    n = valid_plus(text, sizeof(text), "@include \"bom.inc\"\n", 19);
    write_bytes(file, text, n);
    snprintf(want, sizeof(want), "%s:1: " BOM_MSG, inc);
    expect_refused(file, want);
    unlink(inc);
    unlink(file);
}

#define INT32_MSG                                                                                 \
    ": an integer out of the 32-bit range (-2147483648 to 2147483647); a 64-bit integer is "      \
    "written with an L suffix"

/* libconfig drops a \x00 escape from a string without a word: refused at
 * its line. Other escapes, and a backslash escaped before "x00", load. */
static void
test_escapes(void)
{
    static const char *refused[] = {
        "log = { file = \"/tmp/a\\x00b\"; };\n",
        "log = { file = \"\\\\\\x00\"; };\n", /* an escaped backslash, then \x00 */
    };
    static const char *loads[] = {
        "log = { file = \"/tmp/a\\x01b\\t\\\"\"; };\n",
        "log = { file = \"/tmp/a\\\\x00b\"; };\n", /* the text \x00, backslash escaped */
        "# \"\\x00\"\nlog = { file = \"/tmp/a\\x0\"; };\n",
    };
    char text[4096], want[1024];
    const char *file = path_in("esc.conf");
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        size_t n = valid_plus(text, sizeof(text), refused[i], strlen(refused[i]));
        write_bytes(file, text, n);
        snprintf(want, sizeof(want), "%s:5: \\x00 in a string: a setting cannot hold a NUL byte",
                 file);
        expect_refused(file, want);
    }
    for (size_t i = 0; i < sizeof(loads) / sizeof(loads[0]); i++) {
        size_t n = valid_plus(text, sizeof(text), loads[i], strlen(loads[i]));
        write_bytes(file, text, n);
        expect_loads(file);
    }
    unlink(file);
}

/* libconfig 1.5 keeps the low 32 bits of an integer without the L suffix:
 * `workers = 4294967297;` used to load as 1 worker. Such an integer is
 * refused at its line, wherever it is (a list, a plugin's settings, an
 * @include'd file); in range, in hex, with leading zeros or the L suffix,
 * and inside names, strings and comments, numbers load. A float is a float,
 * whatever its exponent. */
static void
test_integers(void)
{
    static const struct {
        const char *extra;
        const char *literal; /* refused as this; NULL: loads */
        const char *msg;
    } cases[] = {
        {"workers = 4294967297;\n", "4294967297", INT32_MSG},
        {"workers = 2147483648;\n", "2147483648", INT32_MSG},
        {"workers = -2147483649;\n", "-2147483649", INT32_MSG},
        {"workers = 0xFFFFFFFF;\n", "0xFFFFFFFF", INT32_MSG},
        {"workers = 00000000000000000000000000000000004294967297;\n",
         "00000000000000000000000000000000004294967297", INT32_MSG},
        {"workers = 99999999999999999999L;\n", "99999999999999999999L",
         ": an integer out of the 64-bit range"},
        {"alerts = { smtp = { url = \"smtp://m\"; from = \"a@b\"; to = (\"a@b\"); }; };\n"
         "x = [1, 2,\n 3000000000];\n",
         "3000000000", INT32_MSG},
        {"workers = 1.5e99999999999;\n", "workers", ": expected an integer, got a float"},
        {"workers = 2;\n", NULL, NULL},
        {"workers = 0x2;\n", NULL, NULL},
        {"workers = 0000000000000000000000000000000002;\n", NULL, NULL},
        {"workers = 2L; drain_timeout = 30LL;\n", NULL, NULL},
        {"# workers = 4294967297;\n/* 4294967297 */ log = { file = \"/tmp/4294967297\"; };\n",
         NULL, NULL},
    };
    char text[4096], want[1024];
    const char *file = path_in("int.conf");
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t n = valid_plus(text, sizeof(text), cases[i].extra, strlen(cases[i].extra));
        write_bytes(file, text, n);
        if (cases[i].literal == NULL) {
            expect_loads(file);
            continue;
        }
        int line = 5 + (strchr(cases[i].extra, '\n') < strstr(cases[i].extra, cases[i].literal)) +
                   (strstr(cases[i].extra, "\n 3") != NULL);
        snprintf(want, sizeof(want), "%s:%d: %s%s", file, line, cases[i].literal, cases[i].msg);
        expect_refused(file, want);
    }

    /* A plugin's settings: 64-bit with L, digits in names; in an @include'd
     * file, at its own line. */
    const char *inc = path_in("int.inc");
    const char *inc_text = "# included\nbig = 4294967297L; s3-4294967297 = 1;\n";
    write_bytes(inc, inc_text, strlen(inc_text));
    snprintf(text, sizeof(text),
             "idempotency = { dsn = \"dbname=twice\"; };\n"
             "plugins = ( { name = \"a\"; path = \"%s\"; settings = {\n"
             "@include \"int.inc\"\n"
             "  low = -2147483648; high = 2147483647; }; } );\n"
             "queues = ( { name = \"q\"; url = \"http://h/0/q\"; dlq_url = \"http://h/0/d\";\n"
             "  plugin = \"a\"; } );\n",
             plugin);
    write_bytes(file, text, strlen(text));
    expect_loads(file);
    inc_text = "# included\nbig = 4294967297; s3-4294967297 = 1;\n";
    write_bytes(inc, inc_text, strlen(inc_text));
    snprintf(want, sizeof(want), "%s:2: 4294967297" INT32_MSG, inc);
    expect_refused(file, want);
    unlink(inc);
    unlink(file);
}

/* Sizes are capped, /dev/zero included: it used to be read for ever. */
static void
test_size(void)
{
    char want[1024];
    const char *file = path_in("big.conf");
    size_t cap = CONFIG_MAX_BYTES;
    char *text = malloc(cap + 2);
    CHECK(text != NULL);
    if (text == NULL) {
        return;
    }
    /* exactly the cap: a valid file padded with a comment */
    int n = snprintf(text, cap, VALID_HEAD "#", plugin);
    memset(text + n, 'x', cap - (size_t) n - 1);
    text[cap - 1] = '\n';
    write_bytes(file, text, cap);
    expect_loads(file);
    /* one byte more */
    text[cap - 1] = 'x';
    text[cap] = '\n';
    write_bytes(file, text, cap + 1);
    snprintf(want, sizeof(want),
             "%s: larger than 4 MiB, the most twice reads of a configuration (with its @include "
             "files)",
             file);
    expect_refused(file, want);
    /* a text handed over larger than the cap (no reader in between) */
    text[cap + 1] = '\0';
    struct diag d = DIAG_INIT;
    struct config *c = NULL;
    CHECK_INT(config_load(file, text, &c, &d), -1);
    CHECK_INT(d.n, 1);
    if (d.n == 1) {
        CHECK_STR(d.lines[0], want);
    }
    diag_free(&d);
    unlink(file);
    free(text);
    /* /dev/zero never ends: refused after the cap, not read for ever */
    expect_refused("/dev/zero", "/dev/zero: larger than 4 MiB, the most twice reads of a "
                                "configuration (with its @include files)");
}

/* @include names that libconfig 1.5 would fail on with only "cannot open
 * include file": a missing file, an absolute path (it looks under the
 * configuration's directory even then), a file that includes itself. A
 * chain of 10 nested files loads, as libconfig allows. */
static void
test_include_names(void)
{
    char text[4096], want[2048], abs[600], file[512], inc[512];
    snprintf(file, sizeof(file), "%s", path_in("names.conf")); /* path_in's buffers rotate */
    snprintf(inc, sizeof(inc), "%s", path_in("abs.inc"));
    size_t n = valid_plus(text, sizeof(text), "@include \"nope.inc\"\n", 20);
    write_bytes(file, text, n);
    snprintf(want, sizeof(want), "%s:5: @include \"nope.inc\": No such file or directory (in %s)",
             file, tmpdir);
    expect_refused(file, want);

    write_bytes(inc, "# nothing\n", 10);
    snprintf(abs, sizeof(abs), "@include \"%s\"\n", inc);
    n = valid_plus(text, sizeof(text), abs, strlen(abs));
    write_bytes(file, text, n);
    snprintf(want, sizeof(want),
             "%s:5: @include \"%s\": an absolute path; write it relative to %s, the "
             "configuration's directory",
             file, inc, tmpdir);
    expect_refused(file, want);

    write_bytes(inc, "@include \"abs.inc\"\n", 19);
    n = valid_plus(text, sizeof(text), "@include \"abs.inc\"\n", 19);
    write_bytes(file, text, n);
    snprintf(want, sizeof(want),
             "%s:1: @include \"abs.inc\": nested more than 10 deep (does a file include itself?)",
             inc);
    expect_refused(file, want);

    for (int i = 1; i <= 10; i++) { /* c1.inc includes c2.inc ... c10.inc */
        char name[32], body[64];
        snprintf(name, sizeof(name), "c%d.inc", i);
        int len = i < 10 ? snprintf(body, sizeof(body), "@include \"c%d.inc\"\n", i + 1)
                         : snprintf(body, sizeof(body), "# the end\n");
        write_bytes(path_in(name), body, (size_t) len);
    }
    n = valid_plus(text, sizeof(text), "@include \"c1.inc\"\n", 18);
    write_bytes(file, text, n);
    expect_loads(file);
    for (int i = 1; i <= 10; i++) {
        char name[32];
        snprintf(name, sizeof(name), "c%d.inc", i);
        unlink(path_in(name));
    }
    unlink(inc);
    unlink(file);
}

/* The cap counts the @include files too; a file that could block a reader
 * (a FIFO) or a directory is refused without being opened for reading. */
static void
test_size_include(void)
{
    char text[4096], want[1024];
    const char *inc = path_in("big.inc");
    size_t half = CONFIG_MAX_BYTES / 2 + 1;
    char *big = malloc(half);
    CHECK(big != NULL);
    if (big == NULL) {
        return;
    }
    memset(big, '\n', half);
    write_bytes(inc, big, half);
    free(big);
    size_t n = valid_plus(text, sizeof(text), "@include \"big.inc\"\n@include \"big.inc\"\n", 38);
    const char *file = path_in("inc-main.conf");
    write_bytes(file, text, n);
    snprintf(want, sizeof(want),
             "%s:6: @include \"big.inc\": the configuration with its @include files is larger "
             "than 4 MiB, the most twice reads",
             file);
    expect_refused(file, want);
    /* one of them is fine */
    n = valid_plus(text, sizeof(text), "@include \"big.inc\"\n", 19);
    write_bytes(file, text, n);
    expect_loads(file);

    const char *fifo = path_in("fifo.inc");
    CHECK(mkfifo(fifo, 0600) == 0);
    n = valid_plus(text, sizeof(text), "  @include \"fifo.inc\"\n", 22);
    write_bytes(file, text, n);
    snprintf(want, sizeof(want), "%s:5: @include \"fifo.inc\": not a regular file", file);
    expect_refused(file, want);
    unlink(fifo);
    unlink(inc);
    unlink(file);
}

/* n settings "sI = 1;" in a plugin's own settings group (any names go). */
static char *
settings_config(int n, const char *list_extra)
{
    size_t cap = (size_t) n * 24 + strlen(list_extra) + 4096;
    char *text = malloc(cap);
    if (text == NULL) {
        return NULL;
    }
    size_t at = (size_t) snprintf(text, cap,
                                  "idempotency = { dsn = \"dbname=twice\"; };\n"
                                  "plugins = ( { name = \"a\"; path = \"%s\"; settings = {\n",
                                  plugin);
    for (int i = 0; i < n; i++) {
        at += (size_t) snprintf(text + at, cap - at, "s%d = 1;\n", i);
    }
    snprintf(text + at, cap - at,
             "}; } );\nqueues = ( { name = \"q\"; url = \"http://h/0/q\";\n"
             "  dlq_url = \"http://h/0/q-dlq\"; plugin = \"a\"; } );\n%s",
             list_extra);
    return text;
}

/* libconfig checks each new setting against all of its group's: 56,000
 * in one group took 39 s. A group or a list is capped, at the line of the
 * first one too many. */
static void
test_entries(void)
{
    char want[1024];
    const char *file = path_in("entries.conf");
    char *text = settings_config(CONFIG_MAX_ENTRIES, "");
    CHECK(text != NULL);
    write_bytes(file, text, strlen(text));
    struct diag d = DIAG_INIT;
    struct config *c = NULL;
    CHECK_INT(config_load(file, NULL, &c, &d), 0);
    CHECK(c != NULL && c->plugins[0].nsettings == CONFIG_MAX_ENTRIES);
    config_free(c);
    diag_free(&d);
    free(text);

    text = settings_config(56000, "");
    write_bytes(file, text, strlen(text));
    snprintf(want, sizeof(want),
             "%s:%d: more than %d settings in one group: twice reads at most that many", file,
             3 + CONFIG_MAX_ENTRIES, CONFIG_MAX_ENTRIES);
    expect_refused(file, want);
    free(text);

    /* a list: 1000 addresses are fine, 1001 are not */
    struct buf to = BUF_INIT;
    for (int i = 0; i < CONFIG_MAX_ENTRIES; i++) {
        buf_printf(&to, "%s\"a%d@example.com\"", i ? ",\n" : "", i);
    }
    char *extra = malloc(to.len + 256);
    snprintf(extra, to.len + 256,
             "alerts = { smtp = { url = \"smtp://m\"; from = \"a@b\"; to = (%s); }; };\n",
             buf_str(&to));
    text = settings_config(1, extra);
    write_bytes(file, text, strlen(text));
    expect_loads(file);
    free(text);
    free(extra);
    buf_puts(&to, ",\n\"one@too.many\"");
    extra = malloc(to.len + 256);
    snprintf(extra, to.len + 256,
             "alerts = { smtp = { url = \"smtp://m\"; from = \"a@b\"; to = (%s); }; };\n",
             buf_str(&to));
    text = settings_config(1, extra);
    write_bytes(file, text, strlen(text));
    snprintf(want, sizeof(want),
             "%s:%d: more than %d entries in one list: twice reads at most that many", file,
             7 + CONFIG_MAX_ENTRIES - 1, CONFIG_MAX_ENTRIES);
    expect_refused(file, want);
    free(text);
    free(extra);
    buf_free(&to);
    unlink(file);
}

/* Settings in all are counted too (libconfig's time grows with a group's
 * size times their number), across @include files: 9 groups of 1000 here,
 * 2 more in an included file. */
static void
test_settings_in_all(void)
{
    char want[1024];
    struct buf b = BUF_INIT, inc = BUF_INIT;
    buf_printf(&b, VALID_HEAD, plugin); /* 10 settings */
    for (int g = 0; g < 11; g++) {
        struct buf *to = g < 9 ? &b : &inc;
        buf_printf(to, "g%d = {\n", g);
        for (int i = 0; i < CONFIG_MAX_ENTRIES; i++) {
            buf_printf(to, "s%d = 1;\n", i);
        }
        buf_puts(to, "};\n");
    }
    buf_puts(&b, "@include \"settings.inc\"\n");
    const char *file = path_in("settings.conf");
    const char *incfile = path_in("settings.inc");
    write_bytes(file, buf_str(&b), b.len);
    write_bytes(incfile, buf_str(&inc), inc.len);
    /* the main file holds 10 + 9 * 1001 settings; one '=' per line in the
     * included one */
    int line = CONFIG_MAX_SETTINGS + 1 - (10 + 9 * (CONFIG_MAX_ENTRIES + 1));
    snprintf(want, sizeof(want),
             "%s:%d: more than %d settings in all: twice reads at most that many", incfile, line,
             CONFIG_MAX_SETTINGS);
    expect_refused(file, want);
    buf_free(&b);
    buf_free(&inc);
    unlink(file);
    unlink(incfile);
}

/* @include directives are counted: a file cannot fan out without end. */
static void
test_include_count(void)
{
    char want[1024];
    const char *inc = path_in("empty.inc");
    write_bytes(inc, "", 0);
    struct buf b = BUF_INIT;
    buf_printf(&b, VALID_HEAD, plugin);
    for (int i = 0; i <= CONFIG_MAX_INCLUDES; i++) {
        buf_puts(&b, "@include \"empty.inc\"\n");
    }
    const char *file = path_in("includes.conf");
    write_bytes(file, buf_str(&b), b.len);
    snprintf(want, sizeof(want),
             "%s:%d: more than %d @include directives: twice follows at most that many", file,
             5 + CONFIG_MAX_INCLUDES, CONFIG_MAX_INCLUDES);
    expect_refused(file, want);
    buf_free(&b);
    unlink(inc);
    unlink(file);
}

/* Past DIAG_MAX_LINES problems, the last line says how many more there
 * were; the count is kept. */
static void
test_problem_cap(void)
{
    const char *file = path_in("many.conf");
    struct buf b = BUF_INIT;
    for (int i = 0; i < 120; i++) {
        buf_printf(&b, "unknown_%d = 1;\n", i);
    }
    write_bytes(file, buf_str(&b), b.len);
    buf_free(&b);
    struct diag d = DIAG_INIT;
    struct config *c = NULL;
    CHECK_INT(config_load(file, NULL, &c, &d), -1);
    CHECK_INT(d.n, DIAG_MAX_LINES + 1);
    CHECK_INT(diag_count(&d), 122); /* 120 unknown, no dsn, no queue */
    if (d.n == DIAG_MAX_LINES + 1) {
        char want[512];
        snprintf(want, sizeof(want), "%s:1: unknown setting 'unknown_0'", file);
        CHECK_STR(d.lines[0], want);
        CHECK_STR(d.lines[DIAG_MAX_LINES], "... 72 more problems not shown");
    }
    diag_free(&d);
    unlink(file);
}

int
main(void)
{
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/twice-test-config-limits-XXXXXX");
    if (mkdtemp(tmpdir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(plugin, sizeof(plugin), "%s/a.so", tmpdir);
    write_bytes(plugin, "", 0);
    test_nul();
    test_nul_fd();
    test_nul_include();
    test_bom();
    test_integers();
    test_escapes();
    test_size();
    test_size_include();
    test_include_names();
    test_entries();
    test_settings_in_all();
    test_include_count();
    test_problem_cap();
    unlink(path_in("nul.conf"));
    unlink(plugin);
    rmdir(tmpdir);
    return check_done("test-config-limits");
}
