/*
 * dlopen_sibling.c - fixture: a plugin that loads a library of its own from
 * the directory it was loaded from (found with dladdr, as plugins that ship
 * their dependencies beside them do; $ORIGIN in a RUNPATH works the same
 * way). Setting `sibling` names the file (default "dep.so"); init fails when
 * it cannot be loaded and logs the directory when it can. handle() returns DONE.
 * Used by: test_reload.py.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <twice/plugin.h>

static int
init(const twice_api *api, const twice_settings *s, void **state)
{
    Dl_info info;
    char dir[4096], path[4200];
    const char *name = api->setting(s, "sibling");
    *state = NULL;
    if (dladdr((void *) init, &info) == 0 || info.dli_fname == NULL) {
        api->log(NULL, TWICE_LOG_ERROR, "dladdr found no file for this plugin");
        return -1;
    }
    snprintf(dir, sizeof(dir), "%s", info.dli_fname);
    char *slash = strrchr(dir, '/');
    if (slash != NULL) {
        *slash = '\0';
    }
    snprintf(path, sizeof(path), "%s/%s", dir, name != NULL ? name : "dep.so");
    if (dlopen(path, RTLD_NOW | RTLD_LOCAL) == NULL) {
        api->log(NULL, TWICE_LOG_ERROR, "cannot load my sibling: %s", dlerror());
        return -1;
    }
    api->log(NULL, TWICE_LOG_INFO, "loaded my sibling from %s", dir);
    return 0;
}

static twice_status
handle(void *state, twice_job *job)
{
    (void) state, (void) job;
    return TWICE_DONE;
}

static const twice_setting settings[] = {
    {"sibling", TWICE_SETTING_STRING, 0, "dep.so", "file beside the plugin to dlopen"},
    {NULL, 0, 0, NULL, NULL},
};

TWICE_PLUGIN(.name = "dlopen-sibling", .version = "1", .key_template = "sibling:{id}",
             .settings = settings, .init = init, .handle = handle)
