/*
 * test-loader.c - the plugin loader: each fixture plugin's exact refusal,
 * the path permission rules on real files, the load rule on in-memory
 * descriptors and settings checks on hand-built configurations.
 * Not a test of running plugins (init/handle belong to the worker).
 */
#include "check.h"

#include "buf.h"
#include "config.h"
#include "diag.h"
#include "jsonpath.h"
#include "keying.h"
#include "keytmpl.h"
#include "loader.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *plugin_dir;

static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));

/* A formatted string, owned by the caller. */
static char *
fmt(const char *f, ...)
{
    struct buf b = BUF_INIT;
    va_list ap;
    va_start(ap, f);
    buf_vprintf(&b, f, ap);
    va_end(ap);
    return buf_steal(&b);
}

/* ---- the fixtures ---- */

/* Open fixture `name`; it must be refused with exactly want (%s = path). */
static void
check_fixture_refused(const char *name, const char *want_fmt)
{
    char *path = fmt("%s/%s.so", plugin_dir, name);
    char *want = fmt(want_fmt, path, path);
    char err[1024] = "";
    struct loaded_plugin p;

    memset(&p, 0xa5, sizeof(p));
    CHECK_INT(loader_open(path, &p, err, sizeof(err)), -1);
    CHECK_STR(err, want);
    CHECK(p.path == NULL && p.desc == NULL && p.tmpl == NULL);
    loader_release(&p);
    free(want);
    free(path);
}

static void
test_fixture_refusals(void)
{
    char *small = fmt("%%s: descriptor size 24 is too small for ABI %d.%d (needs %zu)",
                      TWICE_ABI_MAJOR, TWICE_ABI_MINOR, sizeof(twice_plugin));
    char *major = fmt("%%s: built for ABI %d.0, host supports %d.0-%d.%d", TWICE_ABI_MAJOR + 1,
                      TWICE_ABI_MAJOR, TWICE_ABI_MAJOR, TWICE_ABI_MINOR);
    char *minor = fmt("%%s: built for ABI %d.%d, host supports %d.0-%d.%d", TWICE_ABI_MAJOR,
                      TWICE_ABI_MINOR + 1, TWICE_ABI_MAJOR, TWICE_ABI_MAJOR, TWICE_ABI_MINOR);

    check_fixture_refused("bad_magic", "%s: bad magic 0xdeadbeef, not a twice plugin descriptor");
    check_fixture_refused("newer_major", major);
    check_fixture_refused("newer_minor", minor);
    check_fixture_refused("small_struct", small);
    check_fixture_refused("no_entry", "%s: no entry point twice_plugin_entry: not a twice plugin");
    check_fixture_refused("no_handle", "%s: descriptor has no handle function");
    check_fixture_refused("bad_template",
                          "%s: key_template \"bad:{id\": column 5: unterminated field");
    check_fixture_refused("null_descriptor", "%s: twice_plugin_entry returned no descriptor");
    check_fixture_refused("does_not_exist", "plugin %s: %s: No such file or directory");
    free(small);
    free(major);
    free(minor);

    /* The messages name both versions as the docs promise. */
    char *path = fmt("%s/newer_major.so", plugin_dir);
    char err[1024];
    struct loaded_plugin p;
    CHECK_INT(loader_open(path, &p, err, sizeof(err)), -1);
    CHECK_CONTAINS(err, "newer_major.so: built for ABI 2.0, host supports 1.0-1.2");
    free(path);

    /* A 1.1 descriptor with only the 1.0 fields is refused for its size. */
    char *short11 = fmt("%%s: descriptor size %zu is too small for ABI 1.1 (needs %zu)",
                        offsetof(twice_plugin, key_setting), sizeof(twice_plugin));
    check_fixture_refused("short_1_1", short11);
    free(short11);
}

/* A plugin built for ABI 1.0 (its descriptor ends with derive_key) still
 * loads: the 1.1 fields are never read from it (ASan would see a read past
 * its object). */
static void
test_abi_1_0_loads(void)
{
    char *path = fmt("%s/abi_1_0.so", plugin_dir);
    char err[1024] = "";
    struct loaded_plugin p;
    CHECK_INT(loader_open(path, &p, err, sizeof(err)), 0);
    CHECK_STR(err, "");
    if (p.desc != NULL) {
        CHECK_INT(p.desc->abi_minor, 0);
        CHECK_INT(p.key, LOADER_KEY_TEMPLATE);
        CHECK_STR(p.key_text, "old:{id}");
        CHECK(loader_key_setting(p.desc) == NULL);
        CHECK(loader_describe(p.desc) == NULL);
        struct config_plugin cp = {.name = "old", .line = 3};
        struct diag dg = DIAG_INIT;
        CHECK_INT(loader_check_settings(&p, &cp, "t.conf", &dg), 0);
        CHECK_INT(p.key, LOADER_KEY_TEMPLATE);
        diag_free(&dg);
    }
    loader_release(&p);
    free(path);
}

/* Open bad_fields.so with variant v: refused with exactly want (%s = path),
 * or accepted when want is NULL. */
static void
check_variant(const char *v, const char *want_fmt)
{
    char *path = fmt("%s/bad_fields.so", plugin_dir);
    char err[1024] = "";
    struct loaded_plugin p;

    setenv("TWICE_BAD_FIELDS", v, 1);
    CHECK_INT(loader_open(path, &p, err, sizeof(err)), (want_fmt != NULL ? -1 : 0));
    if (want_fmt != NULL) {
        char *want = fmt(want_fmt, path);
        CHECK_STR(err, want);
        free(want);
    } else {
        CHECK_STR(err, "");
        loader_release(&p);
    }
    unsetenv("TWICE_BAD_FIELDS");
    free(path);
}

static void
test_fixture_fields(void)
{
    const char *name = "%s: plugin name \"%s\" is not 1-64 characters of [a-z0-9_-]";
    char *upper = fmt(name, "%s", "Bad"), *empty = fmt(name, "%s", "");
    char *ctrl = fmt(name, "%s", "a\\nb");
    char *longn =
        fmt(name, "%s", "a123456789012345678901234567890123456789012345678901234567890123");

    check_variant("valid", NULL);
    check_variant("name_upper", upper);
    check_variant("name_empty", empty);
    check_variant("name_null", empty);
    check_variant("name_long", longn);
    check_variant("name_ctrl", ctrl);
    check_variant("flags", "%s: unknown flags 0x80 in the descriptor");
    check_variant("both", "%s: set exactly one of key_template, derive_key and key_setting");
    check_variant("neither",
                  "%s: descriptor sets none of key_template, derive_key and key_setting");
    check_variant("key_setting", NULL);
    check_variant("key_setting_and_template",
                  "%s: set exactly one of key_template, derive_key and key_setting");
    check_variant("key_setting_undeclared",
                  "%s: key_setting 'kye' is not one of its declared string settings");
    check_variant("key_setting_int",
                  "%s: key_setting 'n' is not one of its declared string settings");
    check_variant("key_setting_bad_default",
                  "%s: the default of key setting 'key' \"k:{\": column 3: unterminated field");
    check_variant("setting_name", "%s: setting '9lives' is not a valid setting name");
    check_variant("setting_type", "%s: setting 'x' has an unknown type");
    check_variant("setting_int", "%s: setting 'n' has a default that is not of its type");
    check_variant("setting_bool", "%s: setting 'b' has a default that is not of its type");
    check_variant("setting_dup", "%s: setting 'a' is declared twice");
    check_variant("setting_required_default",
                  "%s: setting 'r' is required and has a default (the default could never "
                  "apply)");
    check_variant("template_ctrl",
                  "%s: key_template \"k\\x1b{\": column 2: control character 0x1b in template");
    check_variant("transactional", NULL);
    check_variant("derive_only", NULL);
    free(upper);
    free(empty);
    free(ctrl);
    free(longn);

    /* derive_key instead of a template: no compiled template. */
    char *path = fmt("%s/bad_fields.so", plugin_dir);
    char err[1024];
    struct loaded_plugin p;
    setenv("TWICE_BAD_FIELDS", "derive_only", 1);
    CHECK_INT(loader_open(path, &p, err, sizeof(err)), 0);
    CHECK(p.tmpl == NULL && p.desc != NULL && p.desc->derive_key != NULL);
    loader_release(&p);
    unsetenv("TWICE_BAD_FIELDS");
    free(path);

    /* An entry point that is data, not code, is never called. */
    path = fmt("%s/entry_is_data.so", plugin_dir);
    char *want = fmt("%s: twice_plugin_entry is not a function: not a twice plugin", path);
    CHECK_INT(loader_open(path, &p, err, sizeof(err)), -1);
    CHECK_STR(err, want);
    free(want);
    free(path);
}

/* A host table just big enough for echo_ok's init and handle. */
static void
stub_log(const twice_job *job, twice_log_level level, const char *f, ...)
{
    (void) job;
    (void) level;
    (void) f;
}

static const char *
stub_key(const twice_job *job)
{
    (void) job;
    return "echo:5";
}

static void
test_fixture_echo_ok(void)
{
    char *path = fmt("%s/echo_ok.so", plugin_dir);
    char err[1024] = "";
    struct loaded_plugin p;

    CHECK_INT(loader_open(path, &p, err, sizeof(err)), 0);
    CHECK_STR(err, "");
    CHECK_STR(p.path, path);
    CHECK(p.path != path); /* a copy, owned by p */
    CHECK(p.desc != NULL && p.tmpl != NULL);
    if (p.desc == NULL || p.tmpl == NULL) {
        free(path);
        return;
    }
    CHECK_STR(p.desc->name, "echo_ok");
    CHECK_STR(p.desc->key_template, "echo:{id}");

    /* The compiled template is the plugin's. */
    char jerr[JSONDOC_ERROR_LEN];
    struct jsondoc *body = jsondoc_parse("{\"id\":5}", 8, jerr, sizeof(jerr));
    struct keytmpl_input in = {body, NULL, NULL, 0, NULL, NULL};
    struct buf key = BUF_INIT;
    CHECK_INT(keytmpl_expand(p.tmpl, &in, &key, err, sizeof(err)), KEYTMPL_OK);
    CHECK_STR(buf_str(&key), "echo:5");
    buf_free(&key);
    jsondoc_free(body);

    /* And the handler says DONE. */
    twice_api api = {.size = sizeof(api), .log = stub_log, .key = stub_key};
    void *state = (void *) 1;
    CHECK_INT(p.desc->init(&api, NULL, &state), 0);
    CHECK_INT(p.desc->handle(state, NULL), TWICE_DONE);

    /* Opening it again (same path) works and gives the same descriptor. */
    struct loaded_plugin q;
    CHECK_INT(loader_open(path, &q, err, sizeof(err)), 0);
    CHECK(q.desc == p.desc);
    loader_release(&q);
    loader_release(&p);
    CHECK(p.path == NULL && p.tmpl == NULL);
    loader_release(&p); /* twice is harmless */
    free(path);

    path = fmt("%s/settings_decl.so", plugin_dir);
    CHECK_INT(loader_open(path, &p, err, sizeof(err)), 0);
    CHECK(p.desc != NULL && p.desc->settings != NULL);
    loader_release(&p);
    free(path);
}

/* ---- path permissions ---- */

static char tmp[PATH_MAX]; /* the mkdtemp directory of this run */

static int
copy_file(const char *src, const char *dst, mode_t mode)
{
    char block[65536];
    int in = open(src, O_RDONLY), out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ssize_t n = 0;
    while (in >= 0 && out >= 0 && (n = read(in, block, sizeof(block))) > 0) {
        if (write(out, block, (size_t) n) != n) {
            n = -1;
            break;
        }
    }
    int rc = in < 0 || out < 0 || n < 0 || fchmod(out, mode) != 0 ? -1 : 0;
    if (in >= 0) {
        close(in);
    }
    if (out >= 0) {
        close(out);
    }
    return rc;
}

/* Make T/rel as a directory with mode, or a copy of echo_ok.so. */
static char *
mk(const char *rel, mode_t mode, int is_dir)
{
    char *p = fmt("%s/%s", tmp, rel);
    int rc;
    if (is_dir) {
        rc = mkdir(p, 0700) == 0 && chmod(p, mode) == 0 ? 0 : -1;
    } else {
        char *src = fmt("%s/echo_ok.so", plugin_dir);
        rc = copy_file(src, p, mode);
        free(src);
    }
    CHECK_INT(rc, 0);
    return p;
}

static char *
mklink(const char *rel, const char *target)
{
    char *p = fmt("%s/%s", tmp, rel);
    CHECK_INT(symlink(target, p), 0);
    return p;
}

/* The path is accepted (by the check and by loader_open). */
static void
check_accepted(const char *path)
{
    char err[1024] = "";
    struct loaded_plugin p;
    CHECK_INT(loader_check_path(path, err, sizeof(err)), 0);
    CHECK_STR(err, "");
    CHECK_INT(loader_open(path, &p, err, sizeof(err)), 0);
    CHECK_STR(err, "");
    loader_release(&p);
}

/* Refused with exactly "plugin PATH: <want>" (%1$s in want: T). */
static void
check_refused(const char *path, const char *want_fmt)
{
    char err[1024] = "";
    struct loaded_plugin p;
    char *tail = fmt(want_fmt, tmp, tmp, tmp, tmp);
    char *want = fmt("plugin %s: %s", path, tail);

    CHECK_INT(loader_check_path(path, err, sizeof(err)), -1);
    CHECK_STR(err, want);
    CHECK_INT(loader_open(path, &p, err, sizeof(err)), -1);
    CHECK_STR(err, want);
    free(want);
    free(tail);
}

static void
test_modes(char *dir, char *file)
{
    check_accepted(file);

    chmod(file, 0775);
    check_refused(file, "file %s/ok/p.so is writable by group (chmod g-w %s/ok/p.so)");
    chmod(file, 0757);
    check_refused(file, "file %s/ok/p.so is writable by others (chmod o-w %s/ok/p.so)");
    chmod(file, 0777);
    check_refused(file, "file %s/ok/p.so is writable by group and others "
                        "(chmod go-w %s/ok/p.so)");
    chmod(file, 0755);

    chmod(dir, 0757);
    check_refused(file, "directory %s/ok is writable by others (chmod o-w %s/ok)");
    chmod(dir, 0775);
    check_refused(file, "directory %s/ok is writable by group (chmod g-w %s/ok)");
    chmod(dir, 01777); /* sticky does not excuse the plugin's own directory */
    check_refused(file, "directory %s/ok is writable by group and others (sticky, but anyone "
                        "can add files to it: keep plugins in a directory only root can write)");
    chmod(dir, 0755);

    /* An ancestor: refused when plainly writable, allowed when sticky. */
    chmod(tmp, 0777);
    check_refused(file, "directory %s is writable by group and others (chmod go-w %s)");
    chmod(tmp, 01777);
    check_accepted(file);
    chmod(tmp, 0700);
    check_accepted(file);

    /* The file's kind. */
    char *fifo = fmt("%s/fifo.so", dir);
    CHECK_INT(mkfifo(fifo, 0644), 0);
    check_refused(fifo, "%s/ok/fifo.so is not a regular file");
    check_refused(dir, "%s/ok is a directory, not a plugin file");
    char *below = fmt("%s/x", file);
    check_refused(below, "%s/ok/p.so: Not a directory");
    free(below);
    free(fifo);

    /* A file that is safe but not a shared object. */
    char *text = fmt("%s/text.so", dir);
    FILE *f = fopen(text, "w");
    fputs("not an ELF file\n", f);
    fclose(f);
    char err[1024];
    struct loaded_plugin p;
    CHECK_INT(loader_check_path(text, err, sizeof(err)), 0);
    CHECK_INT(loader_open(text, &p, err, sizeof(err)), -1);
    char *want = fmt("%s: dlopen: ", text);
    CHECK(strncmp(err, want, strlen(want)) == 0);
    free(want);
    free(text);
}

static void
test_symlinks(const char *file)
{
    char *ww = mk("ww", 0777, 1);  /* world-writable, not sticky */
    char *st = mk("st", 01777, 1); /* world-writable, sticky */
    char *ww_file = mk("ww/p.so", 0755, 0);

    /* From a safe directory to a file in a world-writable one. */
    char *l1 = mklink("ok/to-ww.so", ww_file);
    check_refused(l1, "directory %s/ww is writable by group and others (chmod go-w %s/ww)");
    /* From a world-writable directory to a safe file: it can be repointed. */
    char *l2 = mklink("ww/to-ok.so", file);
    check_refused(l2, "directory %s/ww is writable by group and others (chmod go-w %s/ww)");
    /* ... even a sticky one. */
    char *l3 = mklink("st/to-ok.so", file);
    check_refused(l3, "directory %s/st is writable by group and others (sticky, but anyone "
                      "can add files to it: keep plugins in a directory only root can write)");
    /* A relative symlink in a safe directory to a safe file. */
    char *l4 = mklink("ok/rel.so", "p.so");
    check_accepted(l4);
    /* Directory symlinks: judged by the directory holding them. */
    char *okdir = fmt("%s/ok", tmp);
    char *d1 = mklink("ww/dir", okdir);
    char *via_ww = fmt("%s/p.so", d1);
    check_refused(via_ww, "directory %s/ww is writable by group and others (chmod go-w %s/ww)");
    char *d2 = mklink("st/dir", okdir);
    char *via_st = fmt("%s/p.so", d2);
    check_accepted(via_st);
    if (geteuid() == 0) {
        CHECK_INT(lchown(d2, 65534, 65534), 0);
        check_refused(via_st, "symlink %s/st/dir is owned by uid 65534, not root "
                              "(chown -h root %s/st/dir)");
    }
    /* A loop. */
    char *loop_a = mklink("ok/loop-a.so", "loop-b.so");
    char *loop_b = mklink("ok/loop-b.so", "loop-a.so");
    check_refused(loop_a, "%s/ok/loop-a.so: Too many levels of symbolic links");

    char *ptrs[] = {ww,    st, ww_file, l1, l2,     l3,     l4,
                    okdir, d1, via_ww,  d2, via_st, loop_a, loop_b};
    for (size_t i = 0; i < sizeof(ptrs) / sizeof(ptrs[0]); i++) {
        free(ptrs[i]);
    }
}

static void
test_relative(const char *dir)
{
    char cwd[PATH_MAX];
    CHECK(getcwd(cwd, sizeof(cwd)) != NULL);
    CHECK_INT(chdir(dir), 0);
    check_accepted("p.so");
    check_accepted("./p.so");
    check_accepted("../ok/./p.so");
    check_accepted(".//p.so");
    CHECK_INT(chdir(cwd), 0);
}

/* Ownership by a user other than root and us; needs root to set up. */
static void
test_owners(const char *dir, const char *file)
{
    if (geteuid() != 0) {
        printf("test-loader: skipping the other-owner cases: they need root to chown\n");
        return;
    }
    CHECK_INT(chown(file, 65534, 65534), 0);
    check_refused(file, "file %s/ok/p.so is owned by uid 65534, not root (chown root %s/ok/p.so)");
    CHECK_INT(chown(file, 0, 0), 0);
    CHECK_INT(chown(dir, 65534, 65534), 0);
    check_refused(file, "directory %s/ok is owned by uid 65534, not root (chown root %s/ok)");
    CHECK_INT(chown(dir, 0, 0), 0);
    CHECK_INT(chown(tmp, 65534, 65534), 0);
    check_refused(file, "directory %s is owned by uid 65534, not root (chown root %s)");
    CHECK_INT(chown(tmp, 0, 0), 0);
    check_accepted(file);
}

static int
rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    (void) st;
    (void) ftw;
    return flag == FTW_DP ? rmdir(p) : unlink(p);
}

static void
test_paths(void)
{
    strcpy(tmp, "/tmp/twice-loader-XXXXXX");
    CHECK(mkdtemp(tmp) != NULL);
    char *dir = mk("ok", 0755, 1);
    char *file = mk("ok/p.so", 0755, 0);

    test_modes(dir, file);
    test_symlinks(file);
    test_relative(dir);
    test_owners(dir, file);
    check_refused("", "empty path");

    chmod(tmp, 0700);
    CHECK_INT(nftw(tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS), 0);
    free(file);
    free(dir);
}

/* ---- the load rule on in-memory descriptors ---- */

static twice_status
handle_done(void *state, twice_job *job)
{
    (void) state;
    (void) job;
    return TWICE_DONE;
}

static twice_plugin
good_descriptor(void)
{
    twice_plugin d = {.magic = TWICE_ABI_MAGIC,
                      .abi_major = TWICE_ABI_MAJOR,
                      .abi_minor = TWICE_ABI_MINOR,
                      .size = sizeof(twice_plugin),
                      .name = "mem",
                      .key_template = "mem:{id}",
                      .handle = handle_done};
    return d;
}

static void
check_rule(const twice_plugin *d, const char *want)
{
    char err[256] = "";
    CHECK_INT(loader_check_descriptor("mem.so", d, err, sizeof(err)), want ? -1 : 0);
    CHECK_STR(err, want ? want : "");
}

static void
test_descriptor_rule(void)
{
    twice_plugin d = good_descriptor();
    char want[256];

    check_rule(&d, NULL);
    d.size = sizeof(twice_plugin) + 64; /* bigger is fine: a later build of this minor */
    check_rule(&d, NULL);
    d = good_descriptor();
    d.abi_minor = 0; /* a plugin built for 1.0 still loads in a later host */
    check_rule(&d, NULL);
    d.abi_minor = 1; /* and one built for 1.1 */
    check_rule(&d, NULL);

    /* Each minor has its own minimum: the 1.0 size is enough for 1.0 only. */
    d = good_descriptor();
    d.abi_minor = 0;
    d.size = offsetof(twice_plugin, key_setting);
    check_rule(&d, NULL);
    d.abi_minor = 1;
    snprintf(want, sizeof(want),
             "mem.so: descriptor size %zu is too small for ABI 1.1 (needs %zu)",
             offsetof(twice_plugin, key_setting), sizeof(twice_plugin));
    check_rule(&d, want);
    d.abi_minor = 0;
    d.size = offsetof(twice_plugin, key_setting) - 1;
    snprintf(want, sizeof(want),
             "mem.so: descriptor size %zu is too small for ABI 1.0 (needs %zu)",
             offsetof(twice_plugin, key_setting) - 1, offsetof(twice_plugin, key_setting));
    check_rule(&d, want);

    d = good_descriptor();
    d.magic = 0x12345678;
    d.abi_major = 9; /* the magic is judged first */
    check_rule(&d, "mem.so: bad magic 0x12345678, not a twice plugin descriptor");
    d.magic = TWICE_ABI_MAGIC ^ 0xff000000u;
    snprintf(want, sizeof(want), "mem.so: bad magic 0x%08x, not a twice plugin descriptor",
             TWICE_ABI_MAGIC ^ 0xff000000u);
    check_rule(&d, want);

    d = good_descriptor();
    d.abi_major = TWICE_ABI_MAJOR + 1;
    check_rule(&d, "mem.so: built for ABI 2.2, host supports 1.0-1.2");
    d.abi_major = 0;
    d.abi_minor = 9;
    check_rule(&d, "mem.so: built for ABI 0.9, host supports 1.0-1.2");
    d.abi_major = TWICE_ABI_MAJOR;
    d.abi_minor = TWICE_ABI_MINOR + 1;
    check_rule(&d, "mem.so: built for ABI 1.3, host supports 1.0-1.2");
    d.abi_minor = 65535;
    d.size = 4; /* the version is judged before the size */
    check_rule(&d, "mem.so: built for ABI 1.65535, host supports 1.0-1.2");

    d = good_descriptor();
    d.size = 24;
    snprintf(want, sizeof(want), "mem.so: descriptor size 24 is too small for ABI 1.2 (needs %zu)",
             sizeof(twice_plugin));
    check_rule(&d, want);
    d.size = sizeof(twice_plugin) - 1;
    snprintf(want, sizeof(want),
             "mem.so: descriptor size %zu is too small for ABI 1.2 (needs %zu)",
             sizeof(twice_plugin) - 1, sizeof(twice_plugin));
    check_rule(&d, want);
    d.size = 0;
    snprintf(want, sizeof(want), "mem.so: descriptor size 0 is too small for ABI 1.2 (needs %zu)",
             sizeof(twice_plugin));
    check_rule(&d, want);

    /* Only the 12 version bytes of a tiny descriptor are read (ASan would
     * catch a read past this 12-byte allocation). */
    struct {
        uint32_t magic;
        uint16_t major, minor;
        uint32_t size;
    } head = {TWICE_ABI_MAGIC, TWICE_ABI_MAJOR, TWICE_ABI_MINOR, 12};
    void *tiny = malloc(sizeof(head));
    memcpy(tiny, &head, sizeof(head));
    snprintf(want, sizeof(want), "mem.so: descriptor size 12 is too small for ABI 1.2 (needs %zu)",
             sizeof(twice_plugin));
    check_rule(tiny, want);
    free(tiny);
}

/* ---- settings ---- */

static const twice_setting decl[] = {
    {"smtp_url", TWICE_SETTING_STRING, 1, NULL, "where to send"},
    {"url", TWICE_SETTING_STRING, 0, NULL, NULL},
    {"timeout", TWICE_SETTING_INT, 0, "10", "seconds"},
    {"verbose", TWICE_SETTING_BOOL, 0, NULL, NULL},
    {"api_key", TWICE_SETTING_STRING, 1, NULL, NULL},
    {NULL, TWICE_SETTING_STRING, 0, NULL, NULL},
};

/* Check settings kv[0..n) of plugin "welcome-email" (entry line 10,
 * settings group line 11); the diagnostics must be exactly want[]. */
static void
check_settings(const twice_setting *declared, struct config_kv *kv, size_t n, const char **want,
               size_t nwant)
{
    twice_plugin d = good_descriptor();
    d.settings = declared;
    struct loaded_plugin lp = {.desc = &d};
    struct config_plugin cp = {.name = "welcome-email",
                               .path = "/x/welcome_email.so",
                               .settings = kv,
                               .nsettings = n,
                               .line = 10,
                               .settings_line = 11};
    struct diag dg = DIAG_INIT;

    CHECK_INT(loader_check_settings(&lp, &cp, "twice.conf", &dg), nwant);
    CHECK_INT(dg.n, nwant);
    for (size_t i = 0; i < nwant && i < dg.n; i++) {
        CHECK_STR(dg.lines[i], want[i]);
    }
    diag_free(&dg);
}

static void
test_settings(void)
{
    struct config_kv good[] = {
        {"smtp_url", "smtp://127.0.0.1:25", TWICE_SETTING_STRING, 12, NULL},
        {"timeout", "30", TWICE_SETTING_INT, 13, NULL},
        {"verbose", "true", TWICE_SETTING_BOOL, 14, NULL},
        {"api_key", "k", TWICE_SETTING_STRING, 15, NULL},
    };
    check_settings(decl, good, 4, NULL, 0);

    struct config_kv typo[] = {
        {"smtp_ulr", "smtp://x", TWICE_SETTING_STRING, 12, NULL},
        {"URL", "http://x", TWICE_SETTING_STRING, 13, NULL},
        {"timout", "5", TWICE_SETTING_INT, 14, NULL},
        {"colour", "red", TWICE_SETTING_STRING, 15, NULL},
        {"api_ky", "k", TWICE_SETTING_STRING, 3, "/etc/twice/keys.inc"}, /* @include'd */
    };
    const char *typo_want[] = {
        "twice.conf:12: plugin 'welcome-email': unknown setting 'smtp_ulr' "
        "(did you mean 'smtp_url'?)",
        "twice.conf:13: plugin 'welcome-email': unknown setting 'URL' (did you mean 'url'?)",
        "twice.conf:14: plugin 'welcome-email': unknown setting 'timout' "
        "(did you mean 'timeout'?)",
        "twice.conf:15: plugin 'welcome-email': unknown setting 'colour'",
        "/etc/twice/keys.inc:3: plugin 'welcome-email': unknown setting 'api_ky' "
        "(did you mean 'api_key'?)",
        "twice.conf:11: plugin 'welcome-email': missing required setting 'smtp_url' "
        "(where to send)",
        "twice.conf:11: plugin 'welcome-email': missing required setting 'api_key'",
    };
    check_settings(decl, typo, 5, typo_want, 7);

    struct config_kv types[] = {
        {"smtp_url", "5", TWICE_SETTING_INT, 12, NULL},
        {"timeout", "30", TWICE_SETTING_STRING, 13, NULL},
        {"verbose", "1", TWICE_SETTING_INT, 14, NULL},
        {"url", "true", TWICE_SETTING_BOOL, 15, NULL},
        {"api_key", "k", 7, 16, NULL},
    };
    const char *types_want[] = {
        "twice.conf:12: plugin 'welcome-email': setting 'smtp_url' must be a string, not an int",
        "twice.conf:13: plugin 'welcome-email': setting 'timeout' must be an int, not a string",
        "twice.conf:14: plugin 'welcome-email': setting 'verbose' must be a bool, not an int",
        "twice.conf:15: plugin 'welcome-email': setting 'url' must be a string, not a bool",
        ("twice.conf:16: plugin 'welcome-email': setting 'api_key' must be a string, not of an "
         "unknown type"),
    };
    check_settings(decl, types, 5, types_want, 5);

    const char *missing_want[] = {
        "twice.conf:11: plugin 'welcome-email': missing required setting 'smtp_url' "
        "(where to send)",
        "twice.conf:11: plugin 'welcome-email': missing required setting 'api_key'",
    };
    check_settings(decl, NULL, 0, missing_want, 2);

    struct config_kv stray[] = {{"url", "x", TWICE_SETTING_STRING, 0, NULL}};
    const char *none_want[] = {
        "twice.conf: plugin 'welcome-email': unknown setting 'url' (this plugin takes no "
        "settings)",
    };
    check_settings(NULL, stray, 1, none_want, 1);
    const twice_setting empty[] = {{NULL, TWICE_SETTING_STRING, 0, NULL, NULL}};
    check_settings(empty, stray, 1, none_want, 1);
    check_settings(NULL, NULL, 0, NULL, 0);
}

/* Declarations a plugin author can get wrong, via loader_open's checks on
 * the settings_decl fixture (the good case) and in-memory ones here. */
static void
test_settings_fixture(void)
{
    char *path = fmt("%s/settings_decl.so", plugin_dir);
    char err[1024] = "";
    struct loaded_plugin p;
    CHECK_INT(loader_open(path, &p, err, sizeof(err)), 0);
    if (p.desc != NULL) {
        struct config_kv kv[] = {{"timeout", "10", TWICE_SETTING_STRING, 21, NULL},
                                 {"verbos", "true", TWICE_SETTING_BOOL, 22, NULL}};
        struct config_plugin cp = {.name = "settings_decl",
                                   .settings = kv,
                                   .nsettings = 2,
                                   .line = 19,
                                   .settings_line = 20};
        struct diag dg = DIAG_INIT;
        CHECK_INT(loader_check_settings(&p, &cp, "t.conf", &dg), 3);
        CHECK_INT(dg.n, 3);
        if (dg.n == 3) {
            CHECK_STR(dg.lines[0], "t.conf:21: plugin 'settings_decl': setting 'timeout' must "
                                   "be an int, not a string");
            CHECK_STR(dg.lines[1], "t.conf:22: plugin 'settings_decl': unknown setting "
                                   "'verbos' (did you mean 'verbose'?)");
            CHECK_STR(dg.lines[2], "t.conf:20: plugin 'settings_decl': missing required "
                                   "setting 'url' (where to send)");
        }
        diag_free(&dg);
    }
    loader_release(&p);
    free(path);
}

/* A plugin whose key template is its setting "key" (ABI 1.1). */
static const twice_setting key_decl[] = {
    {"key", TWICE_SETTING_STRING, 0, NULL, "the key template"},
    {"url", TWICE_SETTING_STRING, 0, NULL, NULL},
    {NULL, TWICE_SETTING_STRING, 0, NULL, NULL},
};

/* Check kv of plugin "h" (entry at line 10) with key_setting "key"; the
 * problems must be want (NULL: none). Returns the loaded plugin's key. */
static enum loader_key
check_key_setting(const twice_setting *declared, struct config_kv *kv, size_t n, const char *want,
                  const char **text)
{
    twice_plugin d = good_descriptor();
    d.key_template = NULL;
    d.key_setting = "key";
    d.settings = declared;
    struct loaded_plugin lp = {.desc = &d, .key = LOADER_KEY_NONE};
    struct config_plugin cp = {.name = "h", .settings = kv, .nsettings = n, .line = 10};
    struct diag dg = DIAG_INIT;
    CHECK_INT(loader_check_settings(&lp, &cp, "twice.conf", &dg), want != NULL);
    CHECK_STR(dg.n > 0 ? dg.lines[0] : "", want != NULL ? want : "");
    CHECK(lp.key != LOADER_KEY_SETTING || lp.tmpl != NULL);
    *text = lp.key_text;
    diag_free(&dg);
    loader_release(&lp);
    return lp.key;
}

static void
test_key_setting(void)
{
    const char *text = NULL;
    struct config_kv good[] = {{"key", "inv:{id}", TWICE_SETTING_STRING, 12, NULL}};
    CHECK_INT(check_key_setting(key_decl, good, 1, NULL, &text), LOADER_KEY_SETTING);
    CHECK_STR(text, "inv:{id}");

    struct config_kv bad[] = {{"url", "http://x", TWICE_SETTING_STRING, 11, NULL},
                              {"key", "inv:{id", TWICE_SETTING_STRING, 12, "/etc/twice/h.inc"}};
    CHECK_INT(check_key_setting(key_decl, bad, 2,
                                "/etc/twice/h.inc:12: plugin 'h': setting 'key': key template "
                                "\"inv:{id\": column 5: unterminated field",
                                &text),
              LOADER_KEY_NONE);

    CHECK_INT(check_key_setting(key_decl, NULL, 0, NULL, &text), LOADER_KEY_NONE);
    CHECK(text == NULL);

    const twice_setting with_default[] = {{"key", TWICE_SETTING_STRING, 0, "h:{id}", NULL},
                                          {NULL, TWICE_SETTING_STRING, 0, NULL, NULL}};
    CHECK_INT(check_key_setting(with_default, NULL, 0, NULL, &text), LOADER_KEY_SETTING);
    CHECK_STR(text, "h:{id}");
}

/* A plugin without a key of its own: each queue using it, directly or by
 * a route, must set key, or is named with its FILE:LINE. */
static void
test_queues_need_keys(void)
{
    twice_plugin d = good_descriptor();
    d.key_template = NULL;
    d.key_setting = "key";
    d.settings = key_decl;
    struct loaded_plugin lp = {.desc = &d, .key = LOADER_KEY_NONE};
    struct config_route routes[] = {{"a", "other", 40}, {"b", "h", 41}};
    struct config_queue queues[] = {
        {.name = "direct", .plugin = "h", .line = 30},
        {.name = "keyed", .plugin = "h", .key = "k:{id}", .key_line = 36, .line = 35},
        {.name = "routed",
         .route_by = "type",
         .routes = routes,
         .nroutes = 2,
         .line = 39,
         .file = "/etc/twice/q.inc"},
        {.name = "unrelated", .plugin = "other", .line = 45},
    };
    struct config c = {.file = "twice.conf", .queues = queues, .nqueues = 4};
    struct diag dg = DIAG_INIT;
    CHECK_INT(keying_check_queues(&c, "h", &lp, &dg), 2);
    CHECK_INT(dg.n, 2);
    if (dg.n == 2) {
        CHECK_STR(dg.lines[0], "twice.conf:30: queue 'direct': no key for plugin 'h': set key "
                               "in this queue, or the plugin's setting 'key'");
        CHECK_STR(dg.lines[1], "/etc/twice/q.inc:39: queue 'routed': no key for plugin 'h': "
                               "set key in this queue, or the plugin's setting 'key'");
    }
    diag_free(&dg);
    lp.key = LOADER_KEY_SETTING; /* the setting is given: nothing to say */
    CHECK_INT(keying_check_queues(&c, "h", &lp, &dg), 0);
    diag_free(&dg);
}

int
main(void)
{
    plugin_dir = getenv("TWICE_TEST_PLUGIN_DIR");
    if (plugin_dir == NULL || plugin_dir[0] == '\0') {
        fprintf(stderr, "test-loader: TWICE_TEST_PLUGIN_DIR is not set (run through ctest)\n");
        CHECK(plugin_dir != NULL && plugin_dir[0] != '\0');
        return check_done("test-loader");
    }
    test_fixture_refusals();
    test_fixture_echo_ok();
    test_fixture_fields();
    test_paths();
    test_descriptor_rule();
    test_settings();
    test_settings_fixture();
    test_abi_1_0_loads();
    test_key_setting();
    test_queues_need_keys();
    return check_done("test-loader");
}
