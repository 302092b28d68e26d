/*
 * config_text.c - a configuration as text, before libconfig sees it: the
 * one reader (at most CONFIG_MAX_BYTES, no NUL byte, no byte order mark),
 * and a scan of the text that follows libconfig's scanner far enough to
 * count the settings of each group and the entries of each list and to find
 * the @include files it will read, which are checked the same way.
 * libconfig stops silently at a NUL, reads a file of any size, takes time
 * quadratic in a group's size and, in version 1.5 (Debian 12), keeps only
 * the low 32 bits of an integer written without the L suffix: these checks
 * make such files fail at once with FILE:LINE.
 */
#include "config_text.h"

#include "ascii.h"
#include "buf.h"
#include "cnum.h"
#include "config.h"
#include "fileopen.h"

#include <errno.h>
#include <ctype.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MIB         (1024 * 1024)
#define SCAN_LEVELS 64 /* nesting followed for counting; deeper is not counted */
#define SCAN_DEPTH  10 /* libconfig 1.5 refuses @include nested deeper itself */
#define TOO_LARGE                                                                                 \
    "larger than %d MiB, the most twice reads of a configuration (with its @include files)"

/* Read fd from offset 0 into b, at most cap bytes: 0, 1 when there is more,
 * -1 with errno. pread: the workers of a generation share one open memfd and
 * would race on its offset; a pipe is read in order. */
static int
read_capped(int fd, size_t cap, struct buf *b)
{
    char chunk[16384];
    off_t at = 0;
    for (;;) {
        ssize_t n = pread(fd, chunk, sizeof(chunk), at);
        if (n < 0 && errno == ESPIPE) {
            n = read(fd, chunk, sizeof(chunk));
        }
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return n < 0 ? -1 : 0;
        }
        if (b->len + (size_t) n > cap) {
            return 1;
        }
        if (buf_append(b, chunk, (size_t) n) != 0) {
            errno = ENOMEM;
            return -1;
        }
        at += n;
    }
}

/* "NAME:1: ..." for a text that starts with a byte order mark, which
 * libconfig takes for code ("syntax error" at line 1, on a line that looks
 * right): a UTF-8 one (Windows editors write it), or UTF-16's, whose NUL
 * bytes would otherwise be blamed on a damaged disk. -1 when so. */
static int
check_bom(struct diag *d, const char *name, const char *text, size_t len)
{
    const unsigned char *t = (const unsigned char *) text;
    if (len >= 3 && t[0] == 0xef && t[1] == 0xbb && t[2] == 0xbf) {
        diag_add(d, name, 1,
                 "a byte order mark (the bytes EF BB BF) starts the file, which twice does "
                 "not read: save it as UTF-8 without a BOM");
        return -1;
    }
    if (len >= 2 && ((t[0] == 0xff && t[1] == 0xfe) || (t[0] == 0xfe && t[1] == 0xff))) {
        diag_add(d, name, 1,
                 "UTF-16 text (it starts with the byte order mark %02X %02X): a configuration "
                 "is UTF-8 or ASCII; save it as UTF-8 without a BOM",
                 t[0], t[1]);
        return -1;
    }
    return 0;
}

/* "NAME:LINE: a NUL byte ..." for the first NUL of text, if any, after
 * check_bom: -1. */
static int
check_nul(struct diag *d, const char *name, const char *text, size_t len)
{
    if (check_bom(d, name, text, len) != 0) {
        return -1;
    }
    const char *nul = memchr(text, '\0', len);
    if (nul == NULL) {
        return 0;
    }
    int line = 1;
    for (const char *p = text; p < nul; p++) {
        line += *p == '\n';
    }
    diag_add(d, name, line,
             "a NUL byte: a configuration is text (is the file damaged, or zero-filled after a "
             "crash?); nothing of it was used");
    return -1;
}

int
config_text_read(int fd, const char *name, char **text, size_t *len, struct diag *d)
{
    struct buf b = BUF_INIT;
    int rc = read_capped(fd, CONFIG_MAX_BYTES, &b);
    if (rc < 0) {
        diag_add(d, name, 0, "cannot read the configuration: %s", cnum_strerror(errno));
    } else if (rc > 0) {
        diag_add(d, name, 0, TOO_LARGE, CONFIG_MAX_BYTES / MIB);
    } else if (check_nul(d, name, b.data != NULL ? b.data : "", b.len) == 0) {
        *len = b.len;
        if ((*text = buf_steal(&b)) != NULL) {
            return 0;
        }
        diag_add(d, name, 0, "cannot read the configuration: %s", cnum_strerror(ENOMEM));
    }
    buf_free_wipe(&b); /* it may hold the DSN, passwords, tokens */
    return -1;
}

int
config_text_read_file(const char *path, char **text, size_t *len, struct diag *d)
{
    struct stat st;
    int fd = fileopen_read(path); /* a FIFO with no writer: never waited for */
    if (fd < 0) {
        diag_add(d, path, 0, "cannot read the configuration: %s", cnum_strerror(errno));
        return -1;
    }
    int rc = config_text_read(fd, path, text, len, d);
    if (rc == 0 && *len == 0 && fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode)) {
        /* read() found no writer: say so rather than "missing dsn" */
        diag_add(d, path, 0, "cannot read the configuration: a named pipe that nothing writes to");
        free(*text); /* empty: nothing secret to wipe */
        *text = NULL;
        rc = -1;
    }
    close(fd);
    return rc;
}

/* The scan of a text and the files it includes, as libconfig will read
 * them: its lexical state carries over from a file into the one around it,
 * as libconfig's does. */
struct scan {
    struct config_ctx *x;
    enum { LEX_CODE, LEX_COMMENT, LEX_STRING } lex;
    int lex_line; /* where the comment or string being read starts */
    int level;    /* groups and lists open; 0: the top level, a group */
    struct {
        char open; /* '{', '(' or '[' */
        int count; /* '=' in a group, ',' in a list or array */
        int line;  /* where it opens */
    } levels[SCAN_LEVELS];
    int settings; /* '=' in groups so far, in every file */
    int too_many; /* a count was reported */
    size_t bytes; /* read so far, the main text included */
    int includes; /* @include directives followed */
    int stop;     /* a limit was hit: read no more files */
};

/* One file being scanned. */
struct src {
    const char *sfile; /* as libconfig names it: NULL for the main text, else as written */
    const char *text;
    size_t len;
    int line;
    int depth; /* of @include */
};

static void scan_problem(struct scan *sc, const struct src *f, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
scan_problem(struct scan *sc, const struct src *f, const char *fmt, ...)
{
    struct buf b = BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(&b, fmt, ap);
    va_end(ap);
    config_problem_at(sc->x, f->sfile, f->line, buf_str(&b));
    buf_free(&b);
}

/* A '=' (or ':') names a setting of the group open; a ',' separates the
 * entries of the list or array open. libconfig's time grows with the
 * settings of a group times all settings: both are bounded. */
static void
count(struct scan *sc, const struct src *f, char what)
{
    if (sc->too_many) {
        return; /* one of these is reason enough */
    }
    if (what == '=' && ++sc->settings > CONFIG_MAX_SETTINGS) {
        scan_problem(sc, f, "more than %d settings in all: twice reads at most that many",
                     CONFIG_MAX_SETTINGS);
        sc->too_many = 1;
        return;
    }
    if (sc->level >= SCAN_LEVELS) {
        return;
    }
    int group = sc->level == 0 || sc->levels[sc->level].open == '{';
    /* a list of n entries has n - 1 commas */
    if ((what == '=') != group ||
        ++sc->levels[sc->level].count <= CONFIG_MAX_ENTRIES - (group ? 0 : 1)) {
        return;
    }
    scan_problem(sc, f, "more than %d %s in one %s: twice reads at most that many",
                 CONFIG_MAX_ENTRIES, group ? "settings" : "entries", group ? "group" : "list");
    sc->too_many = 1;
}

static void
nest(struct scan *sc, const struct src *f, char ch)
{
    if (ch == '{' || ch == '(' || ch == '[') {
        if (++sc->level < SCAN_LEVELS) {
            sc->levels[sc->level].open = ch;
            sc->levels[sc->level].count = 0;
            sc->levels[sc->level].line = f->line;
        }
    } else if (sc->level > 0) {
        sc->level--;
    }
}

static void scan_text(struct scan *sc, struct src *f);

/* After the @include file inc, scanned from level `level`: a comment, a
 * string, a group or a list it leaves open. libconfig reads on into the
 * file around it, so an unclosed comment silently took that file's next
 * settings for comment, and an unclosed string or group failed as a
 * "syntax error" at a line of the other file. Reported where it opens in
 * inc, and closed there for the rest of the scan. */
static void
check_include_end(struct scan *sc, struct src *inc, int level)
{
    const char *what = sc->lex == LEX_COMMENT  ? "a /* comment"
                       : sc->lex == LEX_STRING ? "a string"
                                               : NULL;
    if (what != NULL) {
        inc->line = sc->lex_line;
    } else if (sc->level > level && level + 1 < SCAN_LEVELS) {
        char open = sc->levels[level + 1].open;
        what = open == '{' ? "a group ('{')" : open == '(' ? "a list ('(')" : "an array ('[')";
        inc->line = sc->levels[level + 1].line;
    } else {
        return;
    }
    scan_problem(sc, inc,
                 "%s starts here and is not closed before the end of this @include file (each "
                 "@include file must hold whole settings)",
                 what);
    sc->lex = LEX_CODE;
    sc->level = level;
}

/* Read one @include file as libconfig will: include_dir + "/" + name, and
 * scan it. One it cannot open is left to libconfig to report; one that could
 * block (a FIFO, a socket) or is a directory is refused; a device is read
 * like a file, so /dev/null is empty and /dev/zero too large. */
static void
scan_include(struct scan *sc, const struct src *f, const char *name)
{
    char shown[64];
    struct stat st;
    struct buf path = BUF_INIT, b = BUF_INIT;
    if (sc->stop) {
        return;
    }
    config_shown(name, shown);
    if (f->depth + 1 > SCAN_DEPTH) {
        scan_problem(sc, f,
                     "@include \"%s\": nested more than %d deep (does a file include "
                     "itself?)",
                     shown, SCAN_DEPTH);
        sc->stop = 1;
        return;
    }
    if (++sc->includes > CONFIG_MAX_INCLUDES) {
        scan_problem(sc, f, "more than %d @include directives: twice follows at most that many",
                     CONFIG_MAX_INCLUDES);
        sc->stop = 1;
        return;
    }
    if (name[0] == '/') {
        /* libconfig 1.5 would look for it under the directory too */
        scan_problem(sc, f,
                     "@include \"%s\": an absolute path; write it relative to %s, the "
                     "configuration's directory",
                     shown, sc->x->dir);
        return;
    }
    buf_printf(&path, "%s/%s", sc->x->dir, name);
    int fd = open(buf_str(&path), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        scan_problem(sc, f, "@include \"%s\": %s (in %s)", shown, cnum_strerror(errno),
                     sc->x->dir);
        buf_free(&path);
        return;
    }
    buf_free(&path);
    int rc = fstat(fd, &st) != 0                                                   ? -1
             : S_ISDIR(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) ? 2
                                                                                   : 0;
    if (rc == 0) {
        rc = read_capped(fd, CONFIG_MAX_BYTES - sc->bytes, &b);
    }
    close(fd);
    if (rc < 0) {
        scan_problem(sc, f, "@include \"%s\": %s", shown, cnum_strerror(errno));
    } else if (rc == 2) {
        scan_problem(sc, f, "@include \"%s\": not a regular file", shown);
    } else if (rc == 1) {
        scan_problem(sc, f,
                     "@include \"%s\": the configuration with its @include files is larger "
                     "than %d MiB, the most twice reads",
                     shown, CONFIG_MAX_BYTES / MIB);
        sc->stop = 1;
    } else {
        struct src inc = {name, b.data != NULL ? b.data : "", b.len, 1, f->depth + 1};
        config_path_of(sc->x, name, &path);
        if (check_nul(sc->x->d, buf_str(&path), inc.text, inc.len) != 0) {
            sc->x->errors++;
        } else {
            sc->bytes += b.len;
            sc->lex = LEX_CODE;
            int level = sc->level;
            scan_text(sc, &inc);
            check_include_end(sc, &inc, level);
        }
        buf_free(&path);
    }
    buf_free_wipe(&b);
}

/* At the start of a line: `[ \t]*@include[ \t]+"name"` (libconfig's rule:
 * a backslash escapes '\' and '"', and is dropped before anything else).
 * Returns the length taken, 0 when it is not one; the name goes to name. */
static size_t
include_at(const char *t, size_t len, struct buf *name)
{
    size_t i = 0;
    while (i < len && (t[i] == ' ' || t[i] == '\t')) {
        i++;
    }
    if (len - i < 9 || memcmp(t + i, "@include", 8) != 0 ||
        (t[i + 8] != ' ' && t[i + 8] != '\t')) {
        return 0;
    }
    for (i += 8; i < len && (t[i] == ' ' || t[i] == '\t'); i++) {
    }
    if (i >= len || t[i] != '"') {
        return 0;
    }
    for (i++; i < len && t[i] != '"'; i++) {
        if (t[i] == '\\' && i + 1 < len && (t[i + 1] == '\\' || t[i + 1] == '"')) {
            i++;
        } else if (t[i] == '\\') {
            continue;
        }
        buf_putc(name, t[i]);
    }
    return i < len ? i + 1 : 0; /* unterminated: libconfig reads nothing */
}

/* A character that continues a setting's name (libconfig:
 * [A-Za-z*][-A-Za-z0-9_*]*) or a float's digits: a digit after one of these
 * does not start a number. */
static int
continues_token(char ch)
{
    return ascii_isalnum((unsigned char) ch) || ch == '_' || ch == '*' || ch == '-' || ch == '.';
}

/* An integer literal at i (`[-+]?[0-9]+L?L?` or `[-+]?0x[0-9a-fA-F]+L?L?`),
 * refused when its value does not fit what libconfig stores for it: 32 bits
 * without the L suffix (1.5 would truncate 4294967297 to 1 without a word),
 * 64 bits with it. A float is skipped whole. Returns the characters taken,
 * 0 when no number starts at i. */
static size_t
scan_number(struct scan *sc, const struct src *f, size_t i)
{
    const char *t = f->text;
    size_t j = i + (t[i] == '-' || t[i] == '+');
    if ((i > 0 && continues_token(t[i - 1])) || j >= f->len || !isdigit((unsigned char) t[j])) {
        return 0;
    }
    int hex = t[j] == '0' && j + 1 < f->len && (t[j + 1] == 'x' || t[j + 1] == 'X');
    size_t digits = j + (hex ? 2 : 0), end = digits;
    while (end < f->len &&
           (hex ? isxdigit((unsigned char) t[end]) : isdigit((unsigned char) t[end]))) {
        end++;
    }
    if (!hex && end < f->len && (t[end] == '.' || t[end] == 'e' || t[end] == 'E')) {
        while (end < f->len &&
               (isdigit((unsigned char) t[end]) || strchr(".eE+-", t[end]) != NULL)) {
            end++; /* a float: libconfig reads it as a double */
        }
        return end - i;
    }
    int wide = end < f->len && t[end] == 'L';
    size_t len =
        end + (size_t) wide + (size_t) (wide && end + 1 < f->len && t[end + 1] == 'L') - i;
    while (digits + 1 < end && t[digits] == '0') {
        digits++; /* leading zeros do not make a number larger */
    }
    char num[32];
    int n = snprintf(num, sizeof(num), "%s%.*s", t[i] == '-' ? "-" : "",
                     (int) (end - digits < 24 ? end - digits : 24), t + digits);
    errno = 0;
    long long v = n > 0 ? strtoll(num, NULL, hex ? 16 : 10) : 0;
    if (errno == ERANGE || end - digits >= 24 || (!wide && (v < INT_MIN || v > INT_MAX))) {
        scan_problem(sc, f,
                     wide ? "%.*s: an integer out of the 64-bit range"
                          : "%.*s: an integer out of the 32-bit range (-2147483648 to "
                            "2147483647); a 64-bit integer is written with an L suffix",
                     (int) len, t + i);
    }
    return len;
}

/* An escape in a string at i (a backslash): \x00 is refused, since
 * libconfig drops it without a word ("a\x00b" reads "ab") and no setting
 * can hold a NUL byte. Returns the characters taken. */
static size_t
scan_escape(struct scan *sc, const struct src *f, size_t i)
{
    const char *t = f->text;
    if (i + 3 < f->len && t[i + 1] == 'x' && t[i + 2] == '0' && t[i + 3] == '0') {
        scan_problem(sc, f, "\\x00 in a string: a setting cannot hold a NUL byte");
        return 4;
    }
    return 2;
}

/* Code outside strings and comments, one character (or construct) at i;
 * returns how many characters it took. */
static size_t
scan_code(struct scan *sc, struct src *f, size_t i, int bol)
{
    const char *t = f->text;
    char ch = t[i], next = i + 1 < f->len ? t[i + 1] : '\0';
    if (bol && (ch == ' ' || ch == '\t' || ch == '@')) {
        struct buf name = BUF_INIT;
        size_t n = include_at(t + i, f->len - i, &name);
        if (n > 0) {
            for (size_t k = i; k < i + n; k++) {
                f->line += t[k] == '\n'; /* a name may span lines */
            }
            scan_include(sc, f, buf_str(&name));
            buf_free(&name);
            return n;
        }
        buf_free(&name);
    }
    if (ch == '/' && next == '*') {
        sc->lex = LEX_COMMENT;
        sc->lex_line = f->line;
        return 2;
    }
    if (ch == '#' || (ch == '/' && next == '/')) {
        const char *nl = memchr(t + i, '\n', f->len - i);
        return nl != NULL ? (size_t) (nl - (t + i)) : f->len - i;
    }
    size_t number = scan_number(sc, f, i);
    if (number > 0) {
        return number;
    }
    if (ch == '"') {
        sc->lex = LEX_STRING;
        sc->lex_line = f->line;
    } else if (ch == '=' || ch == ':' || ch == ',') {
        count(sc, f, ch == ',' ? ',' : '=');
    } else if (strchr("{([])}", ch) != NULL && ch != '\0') {
        nest(sc, f, ch);
    }
    return 1;
}

static void
scan_text(struct scan *sc, struct src *f)
{
    int bol = 1;
    for (size_t i = 0, n; i < f->len; i += n) {
        const char *t = f->text;
        n = 1;
        if (sc->lex == LEX_CODE) {
            n = scan_code(sc, f, i, bol);
        } else if (sc->lex == LEX_COMMENT && t[i] == '*' && i + 1 < f->len && t[i + 1] == '/') {
            sc->lex = LEX_CODE;
            n = 2;
        } else if (sc->lex == LEX_STRING && t[i] == '\\' && i + 1 < f->len) {
            n = scan_escape(sc, f, i);
        } else if (sc->lex == LEX_STRING && t[i] == '"') {
            sc->lex = LEX_CODE;
        }
        if (n <= 2) {
            f->line += t[i] == '\n' || (n == 2 && t[i + 1] == '\n');
        }
        bol = t[i + n - 1] == '\n';
    }
}

int
config_text_check(struct config_ctx *x, const char *text, size_t len)
{
    int before = x->errors;
    struct src top = {NULL, text, len, 1, 0};
    if (len > CONFIG_MAX_BYTES) {
        diag_add(x->d, x->file, 0, TOO_LARGE, CONFIG_MAX_BYTES / MIB);
        x->errors++;
        return x->errors - before;
    }
    struct scan *sc = calloc(1, sizeof(*sc));
    if (sc == NULL) {
        config_problem_at(x, NULL, 0, "out of memory");
        return x->errors - before;
    }
    sc->x = x;
    sc->bytes = len;
    scan_text(sc, &top);
    free(sc);
    return x->errors - before;
}
