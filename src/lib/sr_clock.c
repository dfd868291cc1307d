/* sr_clock.c - the Redis server's clock against ours: its forward steps.
 *
 * Every time decision is made on the Redis server's clock (TIME in every
 * script), and what the scripts write (a card's last call, the account's
 * pace) is on it too. A forward step of that clock (NTP) of S ms leaves
 * every time written before it S ms behind: a card's interval opens S early,
 * and the pace's slots start again at the stepped now while calls granted
 * before it are still held for theirs. Redis cannot see its own step; a
 * tool can, against a clock no NTP steps, its monotonic one.
 *
 * A reading of Redis's clock (a gate reply's now, asked at mono sent and
 * answered at mono replied) bounds offset = redis_ms - mono_ms to
 * [now - replied, now - sent], a ms either way for the rounding. The
 * readings' bounds taken together, widened by what NTP may slew a clock
 * (DRIFT_PPM) since, hold the offset while Redis's clock does not step. A
 * reading whose lower bound is above their upper one by more than the
 * threshold is a certain forward step, whatever the latency (a slow answer
 * widens a reading, never moves it); its size is known between the two
 * bounds' distances, and the larger is what is recorded: a last call
 * moved by more than the step only waits longer.
 *
 * Per Redis node (each master has its own clock): a step seen on a node is
 * every account's whose cards that node holds, the ones this process last
 * gated there. A gate reply read after it, before the step is recorded,
 * passed on the stepped clock: its calls are not sent (sr-exec answers them
 * retry, class clock_step). And per account: one whose gate now runs on
 * another node than before (a failover, a slot moved) has its times on the
 * old node's clock, and the two nodes' offsets say how far they are apart.
 * clock_step.lua records each account's step in its edge.
 *
 * A process knows nothing before its first reading, and cron starts one a
 * minute. So each saves what it knew of every account's clock in the
 * account's edge at its end (clk:HOST: the boot, the bounds, their mono
 * time), and the next one on this host compares the account's first
 * reading with them: within one boot, CLOCK_MONOTONIC is every process's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sr.h"

/* What NTP may slew a clock by, either way (ntpd's and the kernel's
 * limit), as ms per ms. */
#define DRIFT 0.0005

static double
drifted(const struct sr_clock *c, int64_t t)
{
	return (double)(t - c->at) * DRIFT;
}

static void
anchor(struct sr_clock *c, double lo, double hi, long long now, int64_t t)
{
	c->known = 1;
	c->lo = lo;
	c->hi = hi;
	c->at = t;
	c->since = now;
}

int
sr_clock_sample(struct sr_clock *c, long long now, int64_t sent, int64_t replied, long thr,
    long *lo, long *hi)
{
	/* Redis's ms and ours are each rounded down: a ms either way. */
	double l = (double)(now - replied) - 1, u = (double)(now - sent) + 1, d, clo, chi;

	if (!c->known) {
		anchor(c, l, u, now, replied);
		return 0;
	}
	d = drifted(c, replied);
	clo = c->lo - d;
	chi = c->hi + d;
	if (l > chi + (double)thr) {
		*lo = (long)(l - chi);
		*hi = (long)(u - clo + 0.999);
		anchor(c, l, u, now, replied);
		return 1;
	}
	if (u < clo - (double)thr) {
		/* Backward: only waits are longer. The readings start again. */
		anchor(c, l, u, now, replied);
		return 0;
	}
	/* Apart by less than the threshold: not a step to act on, and no
	 * reading to narrow the bounds with either (their drift lets a reading
	 * that agrees again in). Steps too small each add up here. */
	if (l > chi || u < clo)
		return 0;
	c->lo = l > clo ? l : clo;
	c->hi = u < chi ? u : chi;
	c->at = replied;
	c->since = now;
	return 0;
}

long
sr_clock_threshold(const struct sr_config *cfg)
{
	long headroom = cfg->rate_window_ms - 1000;

	return headroom > SR_CLOCK_MIN_STEP_MS ? headroom : SR_CLOCK_MIN_STEP_MS;
}

void
sr_clocks_init(struct sr_clocks *cs, const struct sr_config *cfg, int ahead_ms)
{
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");

	memset(cs, 0, sizeof *cs);
	cs->thr = sr_clock_threshold(cfg);
	cs->ahead = ahead_ms;
	/* Without the boot's id (not Linux) nothing is saved or asked for. */
	if (f) {
		if (fscanf(f, "%39s", cs->boot) != 1)
			cs->boot[0] = '\0';
		fclose(f);
	}
	if (gethostname(cs->host, sizeof cs->host - 1) != 0 || strpbrk(cs->host, " \t\r\n"))
		cs->boot[0] = '\0';
	cs->host[sizeof cs->host - 1] = '\0';
}

void
sr_clocks_free(struct sr_clocks *cs)
{
	free(cs->node);
	memset(cs, 0, sizeof *cs);
}

static struct sr_clock *
node_clock(struct sr_clocks *cs, int node)
{
	if (node >= cs->nnode) {
		int n = node + 4;

		cs->node = sr_realloc(cs->node, (size_t)n * sizeof *cs->node);
		memset(cs->node + cs->nnode, 0, (size_t)(n - cs->nnode) * sizeof *cs->node);
		cs->nnode = n;
	}
	return &cs->node[node];
}

/* e's times are behind by [lo, hi] ms; since: the last reading of their
 * clock before it (Redis ms). */
static void
edge_step(struct sr_clocks *cs, struct sr_edge *e, long lo, long hi, long long since)
{
	if (!e->step || hi > e->step_hi) {
		e->step_lo = lo;
		e->step_hi = hi;
		e->step_since = since;
	}
	e->step = 1;
	cs->pending = 1;
}

/* A reading of node's clock: a step seen on it is kept until it is recorded
 * (sr_clocks_record). */
static struct sr_clock *
read_node(struct sr_clocks *cs, int node, long long now, int64_t sent, int64_t replied)
{
	struct sr_clock *c = node_clock(cs, node);
	long long since = c->since;
	long lo, hi;

	if (!c->stepped && sr_clock_sample(c, now, sent, replied, cs->thr, &lo, &hi) > 0) {
		c->stepped = 1;
		c->step_lo = lo;
		c->step_hi = hi;
		c->step_since = since;
		if (!c->seen_at)
			c->seen_since = since;
		c->seen_lo += lo;
		c->seen_hi += hi;
		c->seen_at = replied;
		cs->pending = 1;
	}
	return c;
}

void
sr_clocks_read(struct sr_clocks *cs, int node, long long now, int64_t sent, int64_t replied)
{
	read_node(cs, node, now, sent, replied);
}

int
sr_clocks_ask(struct sr_clocks *cs, struct sr_redis *r, const struct sr_config *cfg,
    struct sr_edge *e)
{
	char key[SR_KEY_MAX], field[100];
	const char *argv[] = { "HGET", sr_key_account(key, cfg->prefix, e->acct->id, "edge"), field };

	if (!cs->boot[0] || e->saved_state)
		return 0;
	e->saved_state = 1;
	snprintf(field, sizeof field, "clk:%s", cs->host);
	sr_redis_append(r, 3, argv, NULL);
	return 1;
}

void
sr_clocks_asked(struct sr_clocks *cs, struct sr_edge *e, const redisReply *rep)
{
	char boot[40];
	struct sr_clock c = { 0 };

	if (rep->type != REDIS_REPLY_STRING ||
	    sscanf(rep->str, "%39s %lf %lf %lld %lld", boot, &c.lo, &c.hi, (long long *)&c.at,
	    &c.since) != 5 || strcmp(boot, cs->boot) != 0 || c.lo > c.hi)
		return; /* none, another boot's (its monotonic clock is not ours) */
	c.known = 1;
	e->saved = c;
}

void
sr_clocks_save(struct sr_clocks *cs, struct sr_redis *r, const struct sr_config *cfg,
    struct sr_gateway *gw)
{
	char key[SR_KEY_MAX], field[100], value[200];
	const char *argv[] = { "HSET", key, field, value };
	struct sr_edge *e;
	int n = 0;

	if (!cs->boot[0])
		return;
	snprintf(field, sizeof field, "clk:%s", cs->host);
	for (e = sr_gateway_edge_next(gw, NULL); e; e = sr_gateway_edge_next(gw, e)) {
		const struct sr_clock *c = e->clock_node >= 0 && e->clock_node < cs->nnode ?
		    &cs->node[e->clock_node] : NULL;

		/* (a step not recorded is not saved past: the next process
		 * finds it again) */
		if (!c || !c->known || e->step)
			continue;
		sr_key_account(key, cfg->prefix, e->acct->id, "edge");
		snprintf(value, sizeof value, "%s %.3f %.3f %lld %lld", cs->boot, c->lo, c->hi,
		    (long long)c->at, c->since);
		sr_redis_append(r, 4, argv, NULL);
		n++;
	}
	/* What is not saved only costs the next process its comparison. */
	while (n-- > 0) {
		redisReply *rep = sr_redis_reply(r);

		if (!rep)
			return;
		freeReplyObject(rep);
	}
}

int
sr_clocks_gated(struct sr_clocks *cs, struct sr_edge *e, int node, long long now, int64_t sent,
    int64_t replied)
{
	struct sr_clock *c = read_node(cs, node, now, sent, replied), *m;
	long lo, hi;

	/* Its first reading in this process, against what the last process
	 * of this boot knew of its clock. */
	if (e->saved.known) {
		long long since = e->saved.since;

		if (sr_clock_sample(&e->saved, now, sent, replied, cs->thr, &lo, &hi) > 0)
			edge_step(cs, e, lo, hi, since);
		e->saved.known = 0;
	}
	/* Its first gate here on a node that stepped before: its cards' last
	 * calls may be from before (an earlier run's), unless the step is
	 * older than their interval. (One written since on the new clock only
	 * waits longer.) */
	if (e->clock_node < 0 && c->seen_at &&
	    replied - c->seen_at <= e->acct->interval_ms + c->seen_hi)
		edge_step(cs, e, c->seen_lo, c->seen_hi, c->seen_since);
	if (c->stepped) {
		edge_step(cs, e, c->step_lo, c->step_hi, c->step_since);
	} else if (e->clock_node >= 0 && e->clock_node != node && e->clock_node < cs->nnode &&
	    (m = &cs->node[e->clock_node])->known) {
		/* Its cards' times were written on m's clock, and are behind
		 * this one's by the difference of their offsets. */
		double lo = (c->lo - drifted(c, replied)) - (m->hi + drifted(m, replied));
		double hi = (c->hi + drifted(c, replied)) - (m->lo - drifted(m, replied));

		if (lo > (double)cs->thr)
			edge_step(cs, e, (long)lo, (long)(hi + 0.999), m->since);
	}
	e->clock_node = node;
	return e->step;
}

int
sr_clocks_record(struct sr_clocks *cs, struct sr_redis *r, const struct sr_config *cfg,
    struct sr_gateway *gw, const char *who)
{
	char keys[SR_CLOCK_STEP_KEYS][SR_KEY_MAX], hi[24], lo[24], since[24], ahead[24], thr[24];
	/* clock_step.lua's keys and arguments, as its header declares them */
	const char *argv[SR_CLOCK_STEP_KEYS + SR_CLOCK_STEP_ARGC], **a = argv + SR_CLOCK_STEP_KEYS;
	struct sr_edge *e;
	long recorded = 0, most = 0;
	int rc = 0;

	if (!cs->pending)
		return 0;
	/* Every account last gated on a node that stepped: the step is its. */
	for (e = sr_gateway_edge_next(gw, NULL); e; e = sr_gateway_edge_next(gw, e)) {
		struct sr_clock *c = e->clock_node >= 0 && e->clock_node < cs->nnode ?
		    &cs->node[e->clock_node] : NULL;

		if (c && c->stepped)
			edge_step(cs, e, c->step_lo, c->step_hi, c->step_since);
	}
	for (int i = 0; i < cs->nnode; i++)
		cs->node[i].stepped = 0;
	snprintf(ahead, sizeof ahead, "%d", cs->ahead);
	snprintf(thr, sizeof thr, "%ld", cs->thr);
	for (e = sr_gateway_edge_next(gw, NULL); e; e = sr_gateway_edge_next(gw, e)) {
		if (!e->step)
			continue;
		sr_keys_account(keys, argv, cfg->prefix, e->acct->id, sr_lua_clock_step_keys);
		a[SR_CLOCK_STEP_ARGV_SETTINGS] = e->acct->settings;
		a[SR_CLOCK_STEP_ARGV_ACCOUNT] = e->acct->id;
		snprintf(hi, sizeof hi, "%ld", e->step_hi);
		snprintf(lo, sizeof lo, "%ld", e->step_lo);
		snprintf(since, sizeof since, "%lld", e->step_since);
		a[SR_CLOCK_STEP_ARGV_HI] = hi;
		a[SR_CLOCK_STEP_ARGV_LO] = lo;
		a[SR_CLOCK_STEP_ARGV_SINCE] = since;
		a[SR_CLOCK_STEP_ARGV_AHEAD] = ahead;
		a[SR_CLOCK_STEP_ARGV_THRESHOLD] = thr;
		a[SR_CLOCK_STEP_ARGV_WHO] = who;
		sr_redis_append_script(r, SR_LUA_CLOCK_STEP, SR_CLOCK_STEP_KEYS,
		    SR_CLOCK_STEP_KEYS + SR_CLOCK_STEP_ARGC, argv, NULL);
	}
	cs->pending = 0;
	for (e = sr_gateway_edge_next(gw, NULL); e; e = sr_gateway_edge_next(gw, e)) {
		redisReply *rep;

		if (!e->step || rc < 0)
			continue;
		if (!(rep = sr_redis_reply(r))) {
			rc = -1;
			continue;
		}
		if (rep->type == REDIS_REPLY_ARRAY && rep->elements >= 1 &&
		    rep->element[0]->type == REDIS_REPLY_INTEGER) {
			e->step = 0;
			if (rep->element[0]->integer > 0)
				recorded++;
			if (rep->element[0]->integer > most)
				most = (long)rep->element[0]->integer;
		} else {
			char msg[300], subject[100];

			/* Still to record: its calls are held until it is. */
			snprintf(subject, sizeof subject, "account '%s'", e->acct->id);
			snprintf(msg, sizeof msg, "a step of the Redis server's clock was not recorded "
			    "(its calls are held until it is): %s",
			    rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply");
			sr_warn_each(subject, msg);
			cs->pending = 1;
		}
		freeReplyObject(rep);
	}
	if (recorded)
		sr_warn("the Redis server's clock stepped forward by up to %ld ms: recorded for %ld "
		    "account%s (alert clock_step); the cards called before it wait that much longer",
		    most, recorded, recorded == 1 ? "" : "s");
	return rc;
}
