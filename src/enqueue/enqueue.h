/* enqueue.h - what the files of sr-enqueue share (main.c: the options, the
 * batch loop; parse.c: a request line to a struct req; facts.c: a batch's
 * facts read and written; device.c: device requests, and the race with a
 * device's evaluation; judge.c: judgment and the enqueue scripts;
 * judge_again.c: each card written, judged again; direct.c: the direct
 * path, switch off; emit.c: the acks). */
#ifndef ENQUEUE_H
#define ENQUEUE_H
#include "sr.h"

/* Requests read together, handled in one batch of round trips. */
#define BATCH 2048

/* A request's state: pending until rejected, an error, or done. */
enum { ST_PENDING, ST_REJECTED, ST_ERROR, ST_DONE };

struct req {
	long line;
	int st;
	char error[200];
	char card[65], carrier[65], scene[32], source[129];
	int prio;
	json_t *facts; /* borrowed from obj */
	json_t *obj;
	struct sr_card_facts cf;
	struct sr_device_facts df;
	struct sr_cmd cmd; /* the judged intent, written by sr_command.c */
	int dev_fetched; /* device facts were read with the card's */
	char old_device[65]; /* the card's device in the mirror, before this request */
	int fw;          /* its facts' write in its batch's (append_facts_writes), + 1; 0: none */
	int nwrites;     /* its device membership's writes appended (append_memberships) */
	int restore;     /* its membership written, its device fact older than the stored one */
	char warning[200]; /* facts, a device membership or the account Redis refused */
	int facts_refused; /* Redis refused the request's facts */
	int nrecords;    /* direct path: writes of its outcome appended, not yet answered */
	int sadd;        /* direct path: its account's registration appended, not yet answered */
	int is_device;   /* a device request: {"device":...} */
	long long as_of; /* when its facts were true, ms (its "as_of", else --as-of); 0: now */
	json_t *stale;   /* its facts not written: the stored ones are newer (facts_write.lua) */
	/* The card's device's evaluation state, read before its facts: its
	 * claim counter and whether it was claimed (device_recheck.lua). */
	char dev_seq[24];
	int dev_claimed, dev_state_read, recheck;
	long long requeued_ver; /* the device asked for again after the write */
	/* Which one: the device it was judged with (judge_again reads the
	 * card's facts again into cf, and a card moved meanwhile names another). */
	char requeued_device[sizeof ((struct sr_card_facts *)0)->device];
	char device[65];
	struct sr_direct *direct; /* switch off: executed on the spot */
	/* What its card's facts want when judged again after its write (a
	 * request for the card judged meanwhile, on facts that lack this
	 * one's, wrote last; on the direct path, facts that lagged the call),
	 * queued: judge_again. */
	struct sr_cmd follow;
	int has_follow;
	int again;              /* judge_again: to be judged again */
	struct sr_judgment last; /* judge_again: what was last written for it */
};

/* A batch in flight. Its enqueue scripts are sent without waiting, so Redis
 * runs them while the next batch is read and parsed (the two cores overlap);
 * their replies are collected, and its cards judged again, before the next
 * batch's facts are read. */
#define SEEN_SLOTS (2 * BATCH) /* a power of two */
struct batch {
	struct req reqs[BATCH];
	int n;
	unsigned short seen[SEEN_SLOTS]; /* its cards: request index + 1, 0 free */
	int has_device; /* it holds a device request */
	int moves_card; /* it holds a card request with a device fact (membership) */
	struct sr_cmd_calls *calls; /* the enqueue scripts in flight */
	int ndevices; /* device requests written after the card scripts */
	struct sr_facts_batch facts; /* its facts writes (facts_write.lua) in flight */
	struct sr_facts_batch dev_facts; /* its device requests' */
	int switch_on; /* the global switch, read with the batch's facts */
};

extern struct sr_config cfg;
extern struct sr_redis rds;
extern int redis_up; /* 0: Redis down at the start or lost since (lines not answered: error) */
extern long n_errors; /* requests answered "status":"error" (emit.c) */
extern const char *default_scene, *default_source; /* --scene, --source */
extern long long default_as_of; /* --as-of, ms; 0: when srq receives it */

/* parse.c */
/* Marks r rejected, its error msg with arg (a format and its one string). -1. */
int reject(struct req *r, const char *msg, const char *arg);
/* A JSON line, or a CSV row (taken: r->obj), into r: pending or rejected. */
void parse_line(struct req *r, const char *line);
void parse_csv_row(struct req *r, json_t *row);

/* facts.c */
/* Round 1: the clock, the switch, each card's stored facts and those of a
 * device named in its request, sent without waiting; read_facts reads them,
 * checks each request and overlays its facts: Redis's clock in seconds, or
 * -1 if Redis failed. */
void append_read_facts(struct req *reqs, int n);
long long read_facts(struct batch *b);
/* Round 2: facts of devices known from the stored card facts alone. -1 if
 * Redis failed. */
int read_devices(struct req *reqs, int n);
/* Who says a request's facts: its source, else the tool. */
const char *facts_source(const struct req *r);
/* The requests' facts writes, then their device memberships (appended,
 * not flushed); collect_facts_writes: their replies, said on each request
 * (-1 if Redis failed). */
void append_facts_writes(struct batch *b);
int collect_facts_writes(struct batch *b);
/* Refused facts make a request that has done nothing yet an error. */
void facts_refused_is_error(struct req *r);
/* A membership written for a device fact older than the stored one follows
 * the stored fact again. -1 if Redis failed. */
int restore_memberships(struct batch *b);

/* device.c */
/* The evaluation state of a card's device (appended), read before the
 * device's facts, and its reply into r. */
void append_device_state(const char *device);
void device_state_read(struct req *r, const redisReply *rep);
/* Device requests: their facts, then device_enqueue.lua (appended);
 * collect_devices: their replies (-1 if Redis failed). */
void append_devices(struct batch *b);
int collect_devices(struct batch *b);
/* device_recheck.lua for each card judged with a device whose evaluation
 * state was read, after the enqueue scripts; collect_rechecks: their
 * replies (-1 if Redis failed). */
void append_rechecks(struct batch *b);
int collect_rechecks(struct batch *b);

/* judge.c */
/* The judged intent of a card request (sr_judge on its facts as read, now:
 * Redis's clock in seconds), ready for sr_command.c. */
void judge(struct req *r, long long now);
/* Round 3: judge, then the facts writes and the enqueue scripts, the
 * device requests and rechecks, in one flush; collect_commands: their
 * replies, each request settled. -1 if Redis failed. */
int append_commands(struct batch *b, long long now);
int collect_commands(struct batch *b);

/* judge_again.c */
/* Each card a batch wrote, judged again on its facts as they are now (its
 * writes answered); what they want instead queued, the line's followup.
 * -1 if Redis failed. */
int judge_again(struct batch *b);

/* direct.c */
/* Switch off: the batch's card requests called on the spot, failures
 * queued. -1 if Redis failed (the lines it did not answer are the caller's
 * to fail). direct_free: its gateway, at the end. */
int run_direct(struct batch *b, long long now);
void direct_free(void);

/* emit.c */
/* The batch's acks, one per request in input order, printed and flushed;
 * each request's objects freed. Returns the exit status they make. */
int emit_batch(struct req *reqs, int n);
#endif
