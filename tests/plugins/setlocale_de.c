/*
 * setlocale_de.c - fixture: a plugin whose init() calls
 * setlocale(LC_ALL, "de_DE.UTF-8"), as a library using the user's locale
 * would, so that the whole worker writes and reads "1,5" from then on
 * (setting `locale` picks another comma locale: tr_TR.UTF-8, where libc's
 * strcasecmp("ID", "id") != 0 in every thread of the worker too). Key
 * "amount:{amount}"; each job appends "key amount-as-the-plugin-reads-it" to
 * the file of setting `file`, the amount read with strtod and written with
 * %.2f in the plugin's locale: its own output keeps the locale it chose.
 * init() fails when the locale is not there (LOCPATH), so a test cannot pass
 * without the comma in force. Used by: test_locale.py.
 */
#include <fcntl.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <twice/plugin.h>

static const twice_api *api;
static char path[512];

static int
init(const twice_api *a, const twice_settings *s, void **state)
{
    api = a;
    snprintf(path, sizeof(path), "%s", a->setting(s, "file"));
    *state = NULL;
    const char *locale = a->setting(s, "locale");
    if (setlocale(LC_ALL, locale) == NULL || strcmp(localeconv()->decimal_point, ",") != 0) {
        a->log(NULL, TWICE_LOG_ERROR, "setlocale_de: no %s locale (LOCPATH?)", locale);
        return -1;
    }
    return 0;
}

static twice_status
handle(void *state, twice_job *job)
{
    (void) state;
    const char *amount = api->field(job, "amount", NULL);
    char own[64] = "-";
    if (amount != NULL) {
        char *text = strdup(amount), *dot = text != NULL ? strchr(text, '.') : NULL;
        if (dot != NULL) {
            *dot = ','; /* as the plugin's locale writes it, so strtod reads it all */
        }
        snprintf(own, sizeof(own), "%.2f", text != NULL ? strtod(text, NULL) : 0.0);
        free(text);
    }
    char line[1024];
    int n = snprintf(line, sizeof(line), "%s %s\n", api->key(job), own);
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
    if (fd < 0 || write(fd, line, (size_t) n) != n) {
        api->error(job, "cannot append to %s", path);
        if (fd >= 0) {
            close(fd);
        }
        return TWICE_RETRY;
    }
    close(fd);
    return TWICE_DONE;
}

static const twice_setting settings[] = {
    {"file", TWICE_SETTING_STRING, 1, NULL, "file the job lines are appended to"},
    {"locale", TWICE_SETTING_STRING, 0, "de_DE.UTF-8", "the locale init() puts in force"},
    {NULL, 0, 0, NULL, NULL},
};

TWICE_PLUGIN(.name = "comma-locale", .version = "1", .key_template = "amount:{amount}",
             .settings = settings, .init = init, .handle = handle)
