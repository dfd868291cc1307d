/* sr_profile_load.c - profiles from files: SRQ_PROFILES' *.profile read in
 * name order, the built-in default, 'from = NAME' (a base profile), and
 * which profile serves an account. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sr.h"

extern const char sr_default_profile[]; /* generated from share/profiles/default.profile */

static struct sr_profile **profiles;
static int nprofiles;
static struct sr_profile *builtin;

char *
sr_profile_slurp(const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	char *buf;
	size_t n;

	if (!f) {
		snprintf(err, errlen, "cannot open '%s': %s", path, strerror(errno));
		return NULL;
	}
	buf = sr_malloc(SR_PROFILE_MAX + 1);
	n = fread(buf, 1, SR_PROFILE_MAX + 1, f);
	fclose(f);
	if (n > SR_PROFILE_MAX) {
		snprintf(err, errlen, "'%s' is over %d bytes", path, SR_PROFILE_MAX);
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	if (memchr(buf, '\0', n)) {
		snprintf(err, errlen, "'%s' holds a NUL byte", path);
		free(buf);
		return NULL;
	}
	return buf;
}

/* The shipped example profiles as make install lays them out: the tools in
 * PREFIX/bin, the examples in PREFIX/share/srq/profiles, so from the
 * directory of the running tool they are ../share/srq/profiles (a prefix
 * moved whole, or a DESTDIR staging tree, finds its own). Written into buf;
 * -1 when the running executable cannot be named. */
static int
examples_dir(char *buf, size_t len)
{
	char exe[4096], *slash;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);

	if (n <= 0)
		return -1;
	exe[n] = '\0';
	if (!(slash = strrchr(exe, '/')))
		return -1;
	*slash = '\0';
	snprintf(buf, len, "%s/../share/srq/profiles", exe);
	return 0;
}

/* from = NAME: start from another profile (the built-in 'default', or a
 * profile file of the same directory, else of the installed examples), then
 * override what this file sets. */
int
sr_profile_from(struct sr_parse *ps, const char *name)
{
	char path[4096], err[200], dir[4096], *text = NULL;
	struct sr_parse base;
	int rc;

	if (ps->nseen > 1)
		return sr_perr(ps, "%s", "'from' must come before every other key");
	if (ps->depth >= 4)
		return sr_perr(ps, "from = %s: profiles derived too deep", name);
	memset(&base, 0, sizeof base);
	base.p = ps->p;
	base.dir = ps->dir;
	base.depth = ps->depth + 1;
	if (!strcmp(name, "default")) {
		base.file = "(built-in default)";
		rc = sr_profile_parse_text(&base, sr_default_profile);
	} else {
		if (!sr_valid_id(name) || !ps->dir)
			return sr_perr(ps, "from: no profile '%s'", name);
		snprintf(path, sizeof path, "%s/%s.profile", ps->dir, name);
		if (access(path, F_OK) != 0 && errno == ENOENT && examples_dir(dir, sizeof dir) == 0) {
			char shipped[4096 + 300];

			snprintf(shipped, sizeof shipped, "%s/%s.profile", dir, name);
			if (access(shipped, F_OK) != 0) {
				snprintf(ps->err, sizeof ps->err, "%s: line %d: from: no profile '%s' in %s, "
				    "nor in the installed examples (%s)", ps->file, ps->line, name, ps->dir, dir);
				return -1;
			}
			snprintf(path, sizeof path, "%s", shipped);
		}
		if (!(text = sr_profile_slurp(path, err, sizeof err)))
			return sr_perr(ps, "from: %s", err);
		base.file = path;
		rc = sr_profile_parse_text(&base, text);
		free(text);
	}
	for (int i = 0; i < base.nseen; i++)
		free(base.seen[i]);
	free(base.seen);
	free(base.seen_line);
	if (rc < 0) {
		snprintf(ps->err, sizeof ps->err, "%s", base.err);
		return -1;
	}
	/* The base's accounts are its own business. */
	for (int i = 0; i < ps->p->naccounts; i++)
		free(ps->p->accounts[i]);
	ps->p->naccounts = 0;
	return 0;
}

static int
cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Load the built-in default and every *.profile of dir (when set). */
static void
load_all(const struct sr_config *cfg)
{
	char err[300];
	DIR *d;
	struct dirent *de;
	char **names = NULL;
	int n = 0;

	if (builtin)
		return;
	if (!(builtin = sr_profile_parse(sr_default_profile, "default", "(built-in default)", NULL,
	    err, sizeof err)))
		sr_die(SR_EX_USAGE, "%s", err);
	if (!cfg->profiles_dir)
		return;
	if (!(d = opendir(cfg->profiles_dir)))
		sr_die(SR_EX_USAGE, "SRQ_PROFILES: cannot open '%s':", cfg->profiles_dir);
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);

		if (len > 8 && !strcmp(de->d_name + len - 8, ".profile") && de->d_name[0] != '.')
			sr_push_str(&names, &n, de->d_name);
	}
	closedir(d);
	/* A directory with no profile yet serves every account by the
	 * default, as no SRQ_PROFILES does (and names is NULL: no qsort). */
	if (n > 0)
		qsort(names, (size_t)n, sizeof *names, cmp_names);
	for (int i = 0; i < n; i++) {
		char path[4096], name[256], *text;
		struct sr_profile *p;

		snprintf(path, sizeof path, "%s/%s", cfg->profiles_dir, names[i]);
		snprintf(name, sizeof name, "%.*s", (int)(strlen(names[i]) - 8), names[i]);
		if (!(text = sr_profile_slurp(path, err, sizeof err)))
			sr_die(SR_EX_USAGE, "SRQ_PROFILES: %s", err);
		if (!(p = sr_profile_parse(text, name, path, cfg->profiles_dir, err, sizeof err)))
			sr_die(SR_EX_USAGE, "profile %s", err);
		free(text);
		free(names[i]);
		if (!strcmp(name, "default")) {
			/* default.profile replaces the built-in: it serves every
			 * account no other profile names. */
			if (p->naccounts)
				sr_die(SR_EX_USAGE, "profile %s: the default profile serves every account no "
				    "other profile names: give it no 'accounts' line", path);
			sr_profile_free(builtin);
			builtin = p;
			continue;
		}
		if (p->naccounts == 0)
			sr_die(SR_EX_USAGE, "profile %s: no 'accounts' line: which accounts does it serve?",
			    path);
		profiles = sr_realloc(profiles, (size_t)(nprofiles + 1) * sizeof *profiles);
		profiles[nprofiles++] = p;
	}
	free(names);
}

const struct sr_profile *
sr_profile_for(const struct sr_config *cfg, const char *carrier)
{
	load_all(cfg);
	for (int i = 0; i < nprofiles; i++)
		for (int k = 0; k < profiles[i]->naccounts; k++)
			if (fnmatch(profiles[i]->accounts[k], carrier, 0) == 0)
				return profiles[i];
	return builtin;
}

const struct sr_profile *
sr_profile_next(const struct sr_config *cfg, const struct sr_profile *p)
{
	int i = 0;

	load_all(cfg);
	if (!p)
		return builtin;
	if (p != builtin)
		while (i < nprofiles && profiles[i++] != p)
			;
	return i < nprofiles ? profiles[i] : NULL;
}

void
sr_profiles_free(void)
{
	for (int i = 0; i < nprofiles; i++)
		sr_profile_free(profiles[i]);
	free(profiles);
	profiles = NULL;
	nprofiles = 0;
	sr_profile_free(builtin);
	builtin = NULL;
}
