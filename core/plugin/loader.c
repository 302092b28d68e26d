/*
 * loader.c - loading handler plugins: who can write the file, dlopen, the
 * ABI load rule, the descriptor's sanity and the settings the configuration
 * gives a plugin. Not calling into plugins (init/handle/fini belong to the
 * worker) and not the API table handed to them.
 */
#include "loader.h"

#include "buf.h"
#include "cnum.h"
#include "config.h"
#include "diag.h"
#include "escape.h"
#include "keytmpl.h"
#include "plugdecl.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the load rule ---- */

/* A field of minor 1 exists when the plugin was built for 1.1 or later:
 * the load rule has then checked that its size covers every 1.1 field. */
#define HAS_1_1(d) ((d)->abi_minor >= 1)

const char *
loader_key_setting(const twice_plugin *d)
{
    return plugdecl_key_setting(d);
}

loader_describe_fn
loader_describe(const twice_plugin *d)
{
    return HAS_1_1(d) ? d->describe : NULL;
}

/*
 * Only the four version fields are read before they are judged: they sit at
 * the start of every descriptor of every ABI, so reading them is safe even
 * for a foreign or tiny struct. Nothing past `size` is ever read.
 */
int
loader_check_descriptor(const char *path, const twice_plugin *d, char *err, size_t errlen)
{
    uint32_t magic = d->magic;
    unsigned major = d->abi_major, minor = d->abi_minor;
    uint32_t size = d->size;

    if (magic != TWICE_ABI_MAGIC) {
        snprintf(err, errlen, "%s: bad magic 0x%08x, not a twice plugin descriptor", path,
                 (unsigned) magic);
        return -1;
    }
    if (major != TWICE_ABI_MAJOR || minor > TWICE_ABI_MINOR) {
        snprintf(err, errlen, "%s: built for ABI %u.%u, host supports %d.0-%d.%d", path, major,
                 minor, TWICE_ABI_MAJOR, TWICE_ABI_MAJOR, TWICE_ABI_MINOR);
        return -1;
    }
    if (size < plugdecl_min_size(minor)) {
        snprintf(err, errlen, "%s: descriptor size %u is too small for ABI %u.%u (needs %zu)",
                 path, (unsigned) size, major, minor, plugdecl_min_size(minor));
        return -1;
    }
    return 0;
}

/* ---- who may write the plugin ---- */

/* One path check: the plugin as configured (for messages) and our uid. */
struct walk {
    const char *path;
    uid_t euid;
    char *err;
    size_t errlen;
};

static int walk_error(struct walk *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int
walk_error(struct walk *w, const char *fmt, ...)
{
    char what[PATH_MAX + 256];
    va_list ap;

    va_start(ap, fmt);
    cnum_vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    snprintf(w->err, w->errlen, "plugin %s: %s", w->path, what);
    return -1;
}

/*
 * Judge one object on the way: it must be owned by root or us, and not be
 * writable by group or others. A sticky directory (like /tmp) may be
 * world-writable when it is only an ancestor (`strict` 0): others can add
 * entries there but not replace ours. The directory holding the plugin file
 * (or a symlink to it) is strict: nobody else may add or swap files in it.
 */
static int
judge(struct walk *w, const char *kind, const char *p, const struct stat *st, int strict)
{
    mode_t wbits = st->st_mode & (S_IWGRP | S_IWOTH);
    int sticky = S_ISDIR(st->st_mode) && (st->st_mode & S_ISVTX);

    if (st->st_uid != 0 && st->st_uid != w->euid) {
        const char *chown = S_ISLNK(st->st_mode) ? "chown -h" : "chown";
        if (w->euid == 0) {
            return walk_error(w, "%s %s is owned by uid %u, not root (%s root %s)", kind, p,
                              (unsigned) st->st_uid, chown, p);
        }
        return walk_error(w, "%s %s is owned by uid %u, not root or uid %u (%s root %s)", kind, p,
                          (unsigned) st->st_uid, (unsigned) w->euid, chown, p);
    }
    if (S_ISLNK(st->st_mode) || wbits == 0 || (sticky && !strict)) {
        return 0;
    }
    const char *who = wbits == (S_IWGRP | S_IWOTH) ? "group and others"
                      : wbits == S_IWGRP           ? "group"
                                                   : "others";
    const char *fix = wbits == (S_IWGRP | S_IWOTH) ? "go-w" : wbits == S_IWGRP ? "g-w" : "o-w";
    if (sticky) {
        return walk_error(w,
                          "%s %s is writable by %s (sticky, but anyone can add files to it: "
                          "keep plugins in a directory only root can write)",
                          kind, p, who);
    }
    return walk_error(w, "%s %s is writable by %s (chmod %s %s)", kind, p, who, fix, p);
}

static int
judge_dir(struct walk *w, const char *dir, int strict)
{
    struct stat st;

    if (stat(dir, &st) != 0) {
        return walk_error(w, "%s: %s", dir, cnum_strerror(errno));
    }
    return judge(w, "directory", dir, &st, strict);
}

/* Join a and b with one '/' into out (PATH_MAX). 0, or -1 when too long. */
static int
join(char *out, const char *a, const char *b)
{
    size_t la = strlen(a);
    int n = snprintf(out, PATH_MAX, "%s%s%s", a, la > 0 && a[la - 1] == '/' ? "" : "/", b);
    return n < 0 || n >= PATH_MAX ? -1 : 0;
}

/* Drop the last component of an absolute, resolved directory path. */
static void
parent(char *dir)
{
    char *slash = strrchr(dir, '/');
    if (slash == dir) {
        dir[1] = '\0';
    } else if (slash != NULL) {
        *slash = '\0';
    }
}

/* Replace rest with the symlink's target followed by `next` (what was left
 * after the link). */
static int
follow(struct walk *w, const char *link, const char *next, char *rest)
{
    char target[PATH_MAX], spliced[PATH_MAX];
    ssize_t n = readlink(link, target, sizeof(target) - 1);

    if (n < 0) {
        return walk_error(w, "%s: %s", link, cnum_strerror(errno));
    }
    target[n] = '\0';
    int len = snprintf(spliced, sizeof(spliced), "%s%s%s", target, *next ? "/" : "", next);
    if (len < 0 || len >= PATH_MAX) {
        return walk_error(w, "%s: %s", link, cnum_strerror(ENAMETOOLONG));
    }
    memcpy(rest, spliced, (size_t) len + 1);
    return 0;
}

/* The absolute path to walk into rest: path itself, or the working
 * directory + path. The root directory is judged here, once. */
static int
walk_start(struct walk *w, char *rest)
{
    char cwd[PATH_MAX];

    if (w->path[0] == '\0') {
        return walk_error(w, "empty path");
    }
    if (w->path[0] == '/') {
        if (strlen(w->path) >= PATH_MAX) {
            return walk_error(w, "%s", cnum_strerror(ENAMETOOLONG));
        }
        strcpy(rest, w->path);
    } else if (getcwd(cwd, sizeof(cwd)) == NULL) {
        return walk_error(w, "working directory: %s", cnum_strerror(errno));
    } else if (join(rest, cwd, w->path) != 0) {
        return walk_error(w, "%s", cnum_strerror(ENAMETOOLONG));
    }
    return judge_dir(w, "/", 0);
}

/*
 * The symlink cand, found in directory cur: its owner, its directory when it
 * is the last component, then its target spliced into rest (cur restarts at
 * "/" for an absolute target).
 */
static int
through_symlink(struct walk *w, char *cur, const char *cand, const struct stat *st, int last,
                const char *next, char *rest)
{
    if (judge(w, "symlink", cand, st, 0) != 0 || (last && judge_dir(w, cur, 1) != 0) ||
        follow(w, cand, next, rest) != 0) {
        return -1;
    }
    if (rest[0] == '/') {
        strcpy(cur, "/");
    }
    return 0;
}

/*
 * Resolve the path one component at a time, as the kernel does, judging
 * everything the result depends on: each directory walked through, each
 * symlink followed, the directory of a symlink that is the last component
 * (whoever can write there can repoint it), the file and its directory.
 * realpath() alone would hide the directories holding the symlinks. On
 * success `resolved` (PATH_MAX bytes) holds the file's real path.
 */
static int
walk_path(struct walk *w, char *resolved)
{
    char cur[PATH_MAX] = "/", rest[PATH_MAX], cand[PATH_MAX];
    int hops = 0;
    struct stat st;

    if (walk_start(w, rest) != 0) {
        return -1;
    }
    for (;;) {
        char *comp = rest + strspn(rest, "/");
        size_t n = strcspn(comp, "/");
        char *next = comp + n + strspn(comp + n, "/");
        int last = *next == '\0';

        if (n == 0) {
            return walk_error(w, "%s is a directory, not a plugin file", cur);
        }
        comp[n] = '\0';
        if (strcmp(comp, ".") == 0 || strcmp(comp, "..") == 0) {
            if (comp[1] == '.') {
                parent(cur);
            }
            memmove(rest, next, strlen(next) + 1);
            continue;
        }
        if (join(cand, cur, comp) != 0) {
            return walk_error(w, "%s", cnum_strerror(ENAMETOOLONG));
        }
        if (lstat(cand, &st) != 0) {
            return walk_error(w, "%s: %s", cand, cnum_strerror(errno));
        }
        if (S_ISLNK(st.st_mode)) {
            if (++hops > 40) {
                return walk_error(w, "%s: %s", cand, cnum_strerror(ELOOP));
            }
            if (through_symlink(w, cur, cand, &st, last, next, rest) != 0) {
                return -1;
            }
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            if (judge(w, "directory", cand, &st, 0) != 0) {
                return -1;
            }
            strcpy(cur, cand);
            memmove(rest, next, strlen(next) + 1);
            continue;
        }
        if (!last) {
            return walk_error(w, "%s: %s", cand, cnum_strerror(ENOTDIR));
        }
        if (!S_ISREG(st.st_mode)) {
            return walk_error(w, "%s is not a regular file", cand);
        }
        if (judge(w, "file", cand, &st, 0) != 0 || judge_dir(w, cur, 1) != 0) {
            return -1;
        }
        strcpy(resolved, cand);
        return 0;
    }
}

static int
check_path_resolved(const char *path, char *resolved, char *err, size_t errlen)
{
    struct walk w = {path, geteuid(), err, errlen};
    return walk_path(&w, resolved);
}

int
loader_check_path(const char *path, char *err, size_t errlen)
{
    char resolved[PATH_MAX];
    return check_path_resolved(path, resolved, err, errlen);
}

int
loader_file_open(const char *path, int *fd, char *err, size_t errlen)
{
    char resolved[PATH_MAX];
    struct stat st;

    *fd = -1;
    if (check_path_resolved(path, resolved, err, errlen) != 0) {
        return -1;
    }
    /* The walk resolved every symlink: the last component is the file itself. */
    int f = open(resolved, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (f < 0) {
        snprintf(err, errlen, "plugin %s: %s: %s", path, resolved, cnum_strerror(errno));
        return -1;
    }
    if (fstat(f, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "plugin %s: %s is not a regular file", path, resolved);
        close(f);
        return -1;
    }
    *fd = f;
    return 0;
}

/* ---- the descriptor's contents ---- */

/*
 * Everything after the load rule (text/plugdecl.c, shared with the SDK's
 * mock host): fields up to derive_key are all inside the 1.0 minimum size,
 * which loader_check_descriptor has checked; a field of a later minor is
 * read only for a descriptor of that minor. out's key fields are set (the
 * template owned by out) only when 0 is returned.
 */
static int
check_fields(const char *path, const twice_plugin *d, struct loaded_plugin *out, char *err,
             size_t errlen)
{
    char why[2048];
    struct keytmpl *tmpl = NULL;

    if (plugdecl_check(d, &tmpl, why, sizeof(why)) != 0) {
        snprintf(err, errlen, "%s: %s", path, why);
        return -1;
    }
    out->tmpl = tmpl;
    out->key_text = NULL;
    if (loader_key_setting(d) != NULL) {
        out->key = LOADER_KEY_NONE; /* until the configuration's settings are known */
    } else if (d->derive_key != NULL) {
        out->key = LOADER_KEY_DERIVE;
    } else {
        out->key = LOADER_KEY_TEMPLATE;
        out->key_text = d->key_template;
    }
    return 0;
}

/* Find the entry point and make sure it is a function of the library (a
 * data symbol of that name would be called as code). */
static int
find_entry(const char *path, void *lib, twice_plugin_entry_fn *entry, char *err, size_t errlen)
{
    const ElfW(Sym) *sym = NULL;
    Dl_info info;

    dlerror();
    void *p = dlsym(lib, TWICE_PLUGIN_ENTRY);
    if (p == NULL) {
        snprintf(err, errlen, "%s: no entry point %s: not a twice plugin", path,
                 TWICE_PLUGIN_ENTRY);
        return -1;
    }
    if (dladdr1(p, &info, (void **) &sym, RTLD_DL_SYMENT) != 0 && sym != NULL &&
        ELF64_ST_TYPE(sym->st_info) != STT_FUNC && ELF64_ST_TYPE(sym->st_info) != STT_GNU_IFUNC) {
        snprintf(err, errlen, "%s: %s is not a function: not a twice plugin", path,
                 TWICE_PLUGIN_ENTRY);
        return -1;
    }
    /* POSIX guarantees this object-to-function pointer round trip for dlsym. */
    memcpy(entry, &p, sizeof(*entry));
    return 0;
}

/*
 * The library is never dlclose'd, not even when it is refused: like
 * PostgreSQL's dfmgr, twice never unloads code. A refused library may
 * already have run constructors that registered callbacks (atexit, thread
 * keys, signal handlers) pointing into it; unmapping it would leave those
 * dangling. A refused plugin fails the probe or worker process, which
 * exits anyway.
 */
static void *
dlopen_or_say(const char *path, const char *file, char *err, size_t errlen)
{
    void *lib = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        const char *why = dlerror();
        snprintf(err, errlen, "%s: dlopen: %s", path, why != NULL ? why : "unknown error");
    }
    return lib;
}

/* Everything after dlopen: the entry point, the load rule, the descriptor. */
static int
open_loaded(const char *path, void *lib, struct loaded_plugin *out, char *err, size_t errlen)
{
    twice_plugin_entry_fn entry;
    struct loaded_plugin lp;

    memset(&lp, 0, sizeof(lp));
    if (find_entry(path, lib, &entry, err, errlen) != 0) {
        return -1;
    }
    const twice_plugin *d = entry();
    if (d == NULL) {
        snprintf(err, errlen, "%s: %s returned no descriptor", path, TWICE_PLUGIN_ENTRY);
        return -1;
    }
    if (loader_check_descriptor(path, d, err, errlen) != 0 ||
        check_fields(path, d, &lp, err, errlen) != 0) {
        return -1;
    }
    lp.path = strdup(path);
    if (lp.path == NULL) {
        keytmpl_free(lp.tmpl);
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    lp.desc = d;
    *out = lp;
    return 0;
}

int
loader_open(const char *path, struct loaded_plugin *out, char *err, size_t errlen)
{
    char resolved[PATH_MAX];

    memset(out, 0, sizeof(*out));
    if (check_path_resolved(path, resolved, err, errlen) != 0) {
        return -1;
    }
    /* The resolved path: what was checked is what is mapped. */
    void *lib = dlopen_or_say(path, resolved, err, errlen);
    return lib != NULL ? open_loaded(path, lib, out, err, errlen) : -1;
}

/*
 * Map the file behind fd. By its path when the file there is still the one fd
 * holds (so $ORIGIN, dladdr and the plugin's own sibling files work as
 * usual), else - it was replaced or removed since - through /proc/self/fd,
 * which maps exactly the bytes fd holds. A dlopen by path is checked after
 * the fact: glibc finds an object already mapped from the same file (device
 * and inode) under any name, so a NOLOAD open of fd must return the same
 * handle, or the path was swapped in between.
 */
static void *
dlopen_kept(const char *path, int fd, int *replaced, char *err, size_t errlen)
{
    char self[32], real[PATH_MAX];
    struct stat kept, now;

    snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
    if (fstat(fd, &kept) != 0) {
        snprintf(err, errlen, "%s: descriptor %d: %s", path, fd, cnum_strerror(errno));
        return NULL;
    }
    ssize_t n = readlink(self, real, sizeof(real) - 1);
    if (n < 0) {
        snprintf(err, errlen, "%s: %s: %s (is /proc mounted?)", path, self, cnum_strerror(errno));
        return NULL;
    }
    real[n] = '\0';
    *replaced = !(real[0] == '/' && stat(real, &now) == 0 && now.st_dev == kept.st_dev &&
                  now.st_ino == kept.st_ino);
    void *lib = dlopen_or_say(path, *replaced ? self : real, err, errlen);
    if (lib != NULL && !*replaced && dlopen(self, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD) != lib) {
        snprintf(err, errlen, "%s: %s was replaced while it was being loaded", path, real);
        return NULL;
    }
    return lib;
}

int
loader_open_fd(const char *path, int fd, struct loaded_plugin *out, int *replaced, char *err,
               size_t errlen)
{
    int changed = 0;

    memset(out, 0, sizeof(*out));
    void *lib = dlopen_kept(path, fd, &changed, err, errlen);
    if (replaced != NULL) {
        *replaced = changed;
    }
    return lib != NULL ? open_loaded(path, lib, out, err, errlen) : -1;
}

void
loader_release(struct loaded_plugin *p)
{
    free(p->path);
    keytmpl_free(p->tmpl);
    p->path = NULL;
    p->tmpl = NULL;
    p->key_text = NULL;
}

const char *
loader_key_source(const struct loaded_plugin *p, char *buf, size_t cap)
{
    switch (p->key) {
    case LOADER_KEY_TEMPLATE:
        return "plugin template";
    case LOADER_KEY_SETTING:
        snprintf(buf, cap, "plugin setting '%s'", loader_key_setting(p->desc));
        return buf;
    case LOADER_KEY_DERIVE:
        return "derive_key";
    case LOADER_KEY_NONE:
        break;
    }
    return "none";
}

/* ---- a configuration's settings for a plugin ---- */

/* The declared name closest to a misspelt one, if close enough to be a
 * likely typo (one edit for short names, two otherwise), or NULL. */
static const char *
closest(const twice_setting *decl, const char *name)
{
    const char *best = NULL;
    int best_d = strlen(name) <= 4 ? 2 : 3;

    for (size_t i = 0; decl != NULL && decl[i].name != NULL; i++) {
        int d = diag_edit_distance(name, decl[i].name, 1);
        if (d < best_d) {
            best = decl[i].name;
            best_d = d;
        }
    }
    return best;
}

static const twice_setting *
find_decl(const twice_setting *decl, const char *name)
{
    for (size_t i = 0; decl != NULL && decl[i].name != NULL; i++) {
        if (strcmp(decl[i].name, name) == 0) {
            return &decl[i];
        }
    }
    return NULL;
}

static const char *
type_name(int type)
{
    switch (type) {
    case TWICE_SETTING_STRING:
        return "a string";
    case TWICE_SETTING_INT:
        return "an int";
    case TWICE_SETTING_BOOL:
        return "a bool";
    default:
        return "of an unknown type";
    }
}

/* One given setting: declared, and written with the declared type (an int
 * setting given as "10" is a string and is refused, not converted). */
static int
check_given(const twice_setting *decl, const struct config_plugin *cp, const struct config_kv *kv,
            const char *file, struct diag *d)
{
    const twice_setting *s = find_decl(decl, kv->name);
    file = kv->file != NULL ? kv->file : file;

    if (s == NULL) {
        const char *guess = closest(decl, kv->name);
        if (decl == NULL || decl[0].name == NULL) {
            diag_add(d, file, kv->line,
                     "plugin '%s': unknown setting '%s' (this plugin takes no settings)", cp->name,
                     kv->name);
        } else if (guess != NULL) {
            diag_add(d, file, kv->line, "plugin '%s': unknown setting '%s' (did you mean '%s'?)",
                     cp->name, kv->name, guess);
        } else {
            diag_add(d, file, kv->line, "plugin '%s': unknown setting '%s'", cp->name, kv->name);
        }
        return 1;
    }
    if (kv->type != (int) s->type) {
        diag_add(d, file, kv->line, "plugin '%s': setting '%s' must be %s, not %s", cp->name,
                 kv->name, type_name((int) s->type), type_name(kv->type));
        return 1;
    }
    return 0;
}

/*
 * The key template in the plugin's key setting: the given value (a bad one
 * reported at its line), else the declared default (checked at load), else
 * none. Returns the problems added (0 or 1).
 */
static int
compile_key_setting(struct loaded_plugin *p, const struct config_plugin *cp, const char *file,
                    struct diag *d)
{
    const char *name = loader_key_setting(p->desc);
    const char *text = NULL, *where = cp->file != NULL ? cp->file : file;
    int line = cp->line;
    char why[256];

    keytmpl_free(p->tmpl);
    p->tmpl = NULL;
    p->key_text = NULL;
    p->key = LOADER_KEY_NONE;
    for (size_t i = 0; i < cp->nsettings && text == NULL; i++) {
        if (strcmp(cp->settings[i].name, name) == 0) {
            text = cp->settings[i].value;
            where = cp->settings[i].file != NULL ? cp->settings[i].file : file;
            line = cp->settings[i].line;
        }
    }
    for (const twice_setting *s = p->desc->settings; text == NULL && s->name != NULL; s++) {
        text = strcmp(s->name, name) == 0 ? s->default_value : NULL;
    }
    if (text == NULL) {
        return 0;
    }
    if (keytmpl_compile(text, &p->tmpl, why, sizeof(why)) != 0) {
        struct buf shown = BUF_INIT;
        escape_text(&shown, text, strnlen(text, 2 * TWICE_KEY_MAX));
        diag_add(d, where, line, "plugin '%s': setting '%s': key template \"%s\": %s", cp->name,
                 name, buf_str(&shown), why);
        buf_free(&shown);
        return 1;
    }
    p->key = LOADER_KEY_SETTING;
    p->key_text = text;
    p->key_file = where;
    p->key_line = line;
    return 0;
}

int
loader_check_settings(struct loaded_plugin *p, const struct config_plugin *cp, const char *file,
                      struct diag *d)
{
    const twice_setting *decl = p->desc->settings;
    int added = 0;

    for (size_t i = 0; i < cp->nsettings; i++) {
        added += check_given(decl, cp, &cp->settings[i], file, d);
    }
    for (size_t i = 0; decl != NULL && decl[i].name != NULL; i++) {
        int given = 0;
        for (size_t j = 0; j < cp->nsettings && !given; j++) {
            given = strcmp(cp->settings[j].name, decl[i].name) == 0;
        }
        if (decl[i].required && !given) {
            diag_add(d, cp->settings_file != NULL ? cp->settings_file : file, cp->settings_line,
                     "plugin '%s': missing required setting '%s'%s%s%s", cp->name, decl[i].name,
                     decl[i].description ? " (" : "",
                     decl[i].description ? decl[i].description : "",
                     decl[i].description ? ")" : "");
            added++;
        }
    }
    if (added == 0 && loader_key_setting(p->desc) != NULL) {
        added += compile_key_setting(p, cp, file, d);
    }
    return added;
}
