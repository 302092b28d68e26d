/*
 * config_ctx.c - the helpers of config_ctx.h: problems as FILE:LINE lines,
 * values quoted safely, "did you mean", paths.
 */
#include "config_ctx.h"

#include "buf.h"
#include "escape.h"
#include "utf8.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *
config_field(const struct config_at *at)
{
    return (char *) at->base + at->row->field.offset;
}

void
config_path_of(struct config_ctx *x, const char *sfile, struct buf *path)
{
    if (sfile == NULL) {
        buf_puts(path, x->file);
    } else if (sfile[0] == '/') {
        buf_puts(path, sfile);
    } else {
        buf_printf(path, "%s/%s", x->dir, sfile);
    }
}

void
config_problem_at(struct config_ctx *x, const char *sfile, int line, const char *msg)
{
    struct buf path = BUF_INIT;
    config_path_of(x, sfile, &path);
    diag_add(x->d, buf_str(&path), line, "%s", msg);
    buf_free(&path);
    x->errors++;
}

char *
config_source_path(struct config_ctx *x, const config_setting_t *s)
{
    struct buf path = BUF_INIT;
    config_path_of(x, config_setting_source_file(s), &path);
    return buf_steal(&path);
}

void
config_problem(struct config_ctx *x, const config_setting_t *s, const char *fmt, ...)
{
    struct buf b = BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(&b, fmt, ap);
    va_end(ap);
    config_problem_at(x, s != NULL ? config_setting_source_file(s) : NULL,
                      s != NULL ? config_setting_source_line(s) : 0, buf_str(&b));
    buf_free(&b);
}

const char *
config_kind_name(int type)
{
    switch (type) {
    case CONFIG_TYPE_GROUP:
        return "a group";
    case CONFIG_TYPE_INT:
    case CONFIG_TYPE_INT64:
        return "an integer";
    case CONFIG_TYPE_FLOAT:
        return "a float";
    case CONFIG_TYPE_STRING:
        return "a string";
    case CONFIG_TYPE_BOOL:
        return "a boolean";
    case CONFIG_TYPE_ARRAY:
        return "an array";
    case CONFIG_TYPE_LIST:
        return "a list";
    default:
        return "nothing";
    }
}

const char *
config_shown(const char *s, char out[static 64])
{
    struct buf b = BUF_INIT, one = BUF_INIT;
    size_t n = strlen(s), off = 0;
    while (off < n) {
        size_t l = (unsigned char) s[off] >= 0x80
                       ? utf8_seq_len((const unsigned char *) s + off, n - off)
                       : 1;
        l = l > 0 ? l : 1; /* a byte that is not UTF-8: escaped alone as \xNN */
        buf_reset(&one);
        escape_text(&one, s + off, l);
        if (one.failed) {
            b.failed = 1;
            break;
        }
        if (b.len + one.len > CONFIG_SHOWN_MAX) {
            buf_puts(&b, "...");
            break;
        }
        buf_append(&b, one.data, one.len);
        off += l;
    }
    snprintf(out, 64, "%s", b.failed ? "?" : buf_str(&b));
    buf_free(&one);
    buf_free(&b);
    return out;
}

void
config_suggest_offer(struct config_suggest *sg, const char *cand)
{
    if (cand == NULL || strcmp(cand, sg->name) == 0) {
        return;
    }
    int dist = diag_edit_distance(sg->name, cand, 0);
    if (dist <= 2 && (size_t) dist < strlen(cand) && dist < sg->dist) {
        sg->best = cand;
        sg->dist = dist;
    }
}

int
config_has_prefix(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

int
config_has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

char *
config_join_path(const char *dir, const char *path)
{
    struct buf b = BUF_INIT;
    if (path[0] == '/') {
        buf_puts(&b, path);
    } else {
        buf_printf(&b, "%s%s%s", dir, config_has_suffix(dir, "/") ? "" : "/", path);
    }
    return buf_steal(&b);
}
