/*
 * no_entry.c - fixture: a shared object that exports a function, but not
 * twice_plugin_entry. Must be refused as "not a twice plugin".
 * Used by: test-loader.c, test_ctl.py.
 */
#include <twice/plugin.h>

TWICE_EXPORT int no_entry_answer(void);

int
no_entry_answer(void)
{
    return 42;
}
