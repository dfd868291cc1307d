/* sr_secret.c - every secret srq reads, read here: the tools' own from the
 * environment (SRQ_REDIS_PASSWORD, or the file SRQ_REDIS_PASSWORD_FILE
 * names: sr_secret_read), and a profile's secret.NAME by its spec
 * ("file:PATH", "env:NAME", "env-file:NAME", or a literal: sr_secret_get),
 * for the account whose requests carry it.
 *
 * Secrets are read only from the environment or from files named there or
 * in a profile, never from argv; read only by the tool about to use one,
 * when it does; never printed or logged (an error names the file and why,
 * never a value); and wiped when dropped.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "sr.h"

void
sr_secret_wipe(char *s)
{
	if (s) {
		memset(s, 0, strlen(s));
		free(s);
	}
}

/* A secret file read into buf (cap bytes, NUL-terminated), the newlines
 * that end it cut: its length, or -1 with errno when it cannot be opened
 * (or, with mtime, looked at: *mtime is when it last changed). *rerr: the
 * errno of a read that failed (0: none; a directory opens, and fails
 * there). */
static long
secret_file_read(const char *path, char *buf, size_t cap, struct timespec *mtime, int *rerr)
{
	FILE *f = fopen(path, "r");
	struct stat st;
	size_t n;

	*rerr = 0;
	if (!f || (mtime && fstat(fileno(f), &st) < 0)) {
		int e = errno;

		if (f)
			fclose(f);
		errno = e;
		return -1;
	}
	n = fread(buf, 1, cap - 1, f);
	if (ferror(f))
		*rerr = errno;
	fclose(f);
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = '\0';
	if (mtime)
		*mtime = st.st_mtim;
	return (long)n;
}

/* A secret file of a profile's: one line, not empty. */
static char *
secret_file(const char *path, struct timespec *mtime, char *err, size_t errlen)
{
	char buf[4096], *v = NULL;
	int rerr;
	long n = secret_file_read(path, buf, sizeof buf, mtime, &rerr);

	if (n < 0)
		snprintf(err, errlen, "cannot read the secret file '%s': %s", path, strerror(errno));
	else if (n == 0)
		snprintf(err, errlen, "the secret file '%s' is empty", path);
	else if (strpbrk(buf, "\r\n"))
		snprintf(err, errlen, "the secret file '%s' holds more than one line", path);
	else
		v = sr_strdup(buf);
	memset(buf, 0, sizeof buf);
	return v;
}

int
sr_secret_read(const char *name, char **value, char *err, size_t errlen)
{
	char filevar[128];
	const char *path, *val;

	*value = NULL;
	snprintf(filevar, sizeof filevar, "%s_FILE", name);
	if ((path = getenv(filevar)) && *path) {
		char buf[1024];
		int rerr;
		long n = secret_file_read(path, buf, sizeof buf, NULL, &rerr);

		if (n < 0) {
			snprintf(err, errlen, "%s: cannot open '%s': %s", filevar, path, strerror(errno));
			return -1;
		}
		if (rerr) { /* a directory opens, and fails here */
			snprintf(err, errlen, "%s: cannot read '%s': %s", filevar, path, strerror(rerr));
			memset(buf, 0, sizeof buf);
			return -1;
		}
		if (n)
			*value = sr_strdup(buf);
		memset(buf, 0, sizeof buf);
		return 0;
	}
	if ((val = getenv(name)) && *val)
		*value = sr_strdup(val);
	return 0;
}

const char *
sr_secret_get(struct sr_secret **set, int *nset, const char *name, const char *spec_,
    sr_lookup_fn *lookup, void *arg, int *failed, char *err, size_t errlen)
{
	struct sr_secret *s = NULL;
	int64_t now = sr_mono_ms();
	char spec[1024], *alt, *save;

	for (int i = 0; i < *nset; i++)
		if (!strcmp((*set)[i].name, name))
			s = &(*set)[i];
	if (s && (!s->path[0] || now - s->checked < 1000)) {
		if (s->failed) { /* still unreadable: no request without it */
			snprintf(err, errlen, "%s", s->error);
			*failed = 1;
		}
		return s->value;
	}
	if (s && s->path[0]) {
		struct stat st;

		s->checked = now;
		if (stat(s->path, &st) == 0 && st.st_mtim.tv_sec == s->mtime.tv_sec &&
		    st.st_mtim.tv_nsec == s->mtime.tv_nsec)
			return s->value;
	}
	if (!s) {
		*set = sr_realloc(*set, (size_t)(*nset + 1) * sizeof **set);
		s = &(*set)[(*nset)++];
		memset(s, 0, sizeof *s);
		snprintf(s->name, sizeof s->name, "%s", name);
	}
	sr_secret_wipe(s->value);
	s->value = NULL;
	s->path[0] = '\0';
	s->checked = now;
	s->failed = 0;
	snprintf(spec, sizeof spec, "%s", spec_);
	for (alt = strtok_r(spec, " \t", &save); alt; alt = strtok_r(NULL, " \t", &save)) {
		const char *path = NULL;
		char expanded[512];

		if (!strncmp(alt, "env:", 4)) {
			const char *val = getenv(alt + 4);

			if (val && *val) {
				s->value = sr_strdup(val);
				return s->value;
			}
			continue;
		}
		if (!strncmp(alt, "env-file:", 9)) {
			if (!(path = getenv(alt + 9)) || !*path)
				continue;
		} else if (!strncmp(alt, "file:", 5)) {
			struct sr_buf out = { expanded, 0, sizeof expanded };

			if (sr_expand(alt + 5, SR_CTX_RAW, lookup, arg, &out, err, errlen) < 0) {
				*failed = 1;
				return NULL;
			}
			path = expanded;
		} else {
			s->value = sr_strdup(alt);
			return s->value;
		}
		snprintf(s->path, sizeof s->path, "%s", path);
		if (!(s->value = secret_file(s->path, &s->mtime, err, errlen))) {
			*failed = s->failed = 1;
			snprintf(s->error, sizeof s->error, "%s", err);
		}
		return s->value;
	}
	return NULL;
}

void
sr_secrets_free(struct sr_secret **set, int *nset)
{
	for (int i = 0; i < *nset; i++)
		sr_secret_wipe((*set)[i].value);
	free(*set);
	*set = NULL;
	*nset = 0;
}
