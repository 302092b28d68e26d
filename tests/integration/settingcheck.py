"""settingcheck: the check that `twiced -t` refuses a bundled plugin's bad setting at the
line of twice.conf that sets it, as a plugin's api->setting_error asks (ABI 1.2).

What it is for: the acceptance tests of the plugins that blame a setting (exec, http,
sync) share one way to write the entry (twiceconf.plugin_lines, with an @include file
or not), to work out from that text which FILE:LINE twiced must name, and to check it
does. Not for building whole configurations (twiceconf) or driving twiced (twicetest).

Used by: test_exec_plugin.py, test_http_plugin.py, test_plugins.py.
"""

import os
import re

import twiceconf as tc

INCLUDE = "bad.inc"  # the @include file of plugin_lines(include=INCLUDE), beside twice.conf


def setting_place(config_path, config_text, plugin_name, setting_name, include_path=None):
    """(file, line) where twiced places an error in setting setting_name of
    plugin_lines()'s entry for plugin_name: the line that sets it, in the file at
    include_path (the entry's @include file) when it is set there, else in the
    configuration (config_text, at config_path); the line of the entry's settings group
    when it is set nowhere (the setting's declared default)."""
    sets = re.compile(r"\s*%s = " % re.escape(setting_name))
    if include_path is not None:
        with open(include_path, encoding="utf-8") as f:
            for n, text in enumerate(f.read().splitlines(), 1):
                if sets.match(text):
                    return include_path, n
    lines = config_text.splitlines()
    opening = "{ name = %s; path = " % tc.quote(plugin_name)
    first = next(n for n, text in enumerate(lines) if opening in text)
    last = next(n for n in range(first, len(lines)) if lines[n].startswith("}"))
    for n in range(first, last):
        if sets.match(lines[n]):
            return config_path, n + 1
    return config_path, first + 2  # plugin_lines() opens the settings group on line 2


class SettingRefusal:
    """A mixin for twicetest.TwiceTestCase."""

    def assert_setting_refused(self, conf, plugin, setting, want, include=None):
        """`twiced -t` refuses conf, which holds plugin_lines()'s entry for plugin (made
        with include=INCLUDE when include is given: the settings of that file, written
        here beside the configuration), with `FILE:LINE: plugin 'PLUGIN': setting
        'SETTING': WANT` at setting_place(), not as "init failed" at the entry."""
        d = self.twiced(conf)
        inc = None
        if include is not None:
            inc = os.path.join(d.workdir, INCLUDE)
            with open(inc, "w", encoding="utf-8") as f:
                f.write(tc.include_text(include))
        r = d.check_config()
        out = r.stdout + r.stderr
        self.assertEqual(r.returncode, 1, out)
        where = setting_place(d.config_path, d.config_text, plugin, setting, inc)
        self.assertIn("%s:%d: plugin '%s': setting '%s': %s" % (*where, plugin, setting, want),
                      out)
        self.assertNotIn("init failed", out)
