/* sr_lua_check.c - the keys a script is called with, checked against those
 * its header declares (scripts/lua-embed makes the tables): a caller out of
 * step with its script is refused before anything is sent, naming the key
 * and the shape its header declares at that place. */
#include <string.h>

#include "sr.h"

/* Whether str[0..n) matches pat[0..m): '*' any text, anything else itself. */
static int
glob(const char *pat, size_t m, const char *str, size_t n)
{
	while (m && *pat != '*') {
		if (!n || *pat != *str)
			return 0;
		pat++, m--, str++, n--;
	}
	if (!m)
		return !n;
	/* the last '*': what follows it ends str */
	if (!memchr(pat + 1, '*', m - 1))
		return n >= m - 1 && !memcmp(str + n - (m - 1), pat + 1, m - 1);
	for (size_t k = 0; k <= n; k++)
		if (glob(pat + 1, m - 1, str + k, n - k))
			return 1;
	return 0;
}

int
sr_lua_key_ok(const char *shape, const char *key, size_t len)
{
	static const char acct[] = "*:carrier:{*}:";

	for (const char *s = shape, *e; *s; s = *e ? e + 1 : e) {
		char pat[SR_KEY_MAX + sizeof acct];
		int n;

		e = s + strcspn(s, "|");
		/* P: the prefix; a key of an account's is named by its suffix */
		n = s[0] == 'P' && s[1] == ':' ? snprintf(pat, sizeof pat, "*%.*s", (int)(e - s - 1), s + 1) :
		    snprintf(pat, sizeof pat, "%s%.*s", acct, (int)(e - s), s);
		if (n > 0 && (size_t)n < sizeof pat && glob(pat, (size_t)n, key, len))
			return 1;
	}
	return 0;
}

int
sr_lua_check_keys(enum sr_script s, int nkeys, const char **keys, const size_t *lens, char *err,
    size_t errn)
{
	int fixed = sr_lua_keys[s] == SR_LUA_KEYS_EACH ? 0 : sr_lua_keys[s] < 0 ? -sr_lua_keys[s] :
	    sr_lua_keys[s];
	int each = sr_lua_item_keys[s];

	if (each ? nkeys <= fixed || (nkeys - fixed) % each : nkeys != fixed) {
		if (each)
			snprintf(err, errn, "%s.lua called with %d keys; its header declares %d and %d per item",
			    sr_lua_name[s], nkeys, fixed, each);
		else
			snprintf(err, errn, "%s.lua called with %d keys; its header declares %d",
			    sr_lua_name[s], nkeys, fixed);
		return -1;
	}
	for (int i = 0; i < nkeys; i++) {
		const char *shape = i < fixed ? sr_lua_key_shapes[s][i] :
		    sr_lua_item_shapes[s][(i - fixed) % each];
		size_t len = lens ? lens[i] : strlen(keys[i]);

		if (!sr_lua_key_ok(shape, keys[i], len)) {
			if (i < fixed)
				snprintf(err, errn, "%s.lua's KEYS[%d] is '%.*s'; its header declares %s there",
				    sr_lua_name[s], i + 1, (int)(len < 200 ? len : 200), keys[i], shape);
			else
				snprintf(err, errn, "%s.lua's KEYS[%d] (item %d's key %d) is '%.*s'; its header "
				    "declares %s there", sr_lua_name[s], i + 1, (i - fixed) / each + 1,
				    (i - fixed) % each + 1, (int)(len < 200 ? len : 200), keys[i], shape);
			return -1;
		}
	}
	return 0;
}
