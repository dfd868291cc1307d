/* http.c - sr-gwsim's HTTP side (libmicrohttpd): the daemon, when a
 * request arrives (a connection's handshake, network jitter), and a
 * request's way through its shape's parse, the carrier's admission and
 * decision, and its shape's answer; the helpers the shapes share.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "gwsim.h"

int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static enum MHD_Result
reply_as(struct MHD_Connection *con, int http, const char *type, const char *body,
    int retry_after)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), (void *)body,
	    MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;

	MHD_add_response_header(r, "Content-Type", type ? type : "application/json");
	if (retry_after) {
		char ra[24];

		snprintf(ra, sizeof ra, "%ld", retry_after_s);
		MHD_add_response_header(r, "Retry-After", ra);
	}
	ret = MHD_queue_response(con, (unsigned)http, r);
	MHD_destroy_response(r);
	return ret;
}

enum MHD_Result
reply(struct MHD_Connection *con, int http, const char *body, int retry_after)
{
	return reply_as(con, http, NULL, body, retry_after);
}

/* Copy src into dst (65 bytes) if it is an id, else make dst "": a long
 * id must be refused, not truncated into another one. */
void
id_copy(char *dst, const char *src)
{
	dst[0] = '\0';
	if (src && sr_valid_id(src))
		snprintf(dst, 65, "%s", src);
}

/* With --token-file, an API gateway in front of the carrier wants the
 * bearer, whatever the shape behind it. */
int
bearer_ok(struct MHD_Connection *con)
{
	const char *auth = MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Authorization");

	return !token || (auth && !strncmp(auth, "Bearer ", 7) && !strcmp(auth + 7, token));
}

/* What the shapes that answer HTTP 200 with the outcome in the body say
 * outside it: a 5xx as a plain-text 500, a missing --token-file bearer as
 * 401. 1 when a is that answer; else a->http is 200. */
int
answer_outside(const struct call *c, struct answer *a)
{
	a->http = 200;
	if (c->v == V_INTERNAL) {
		a->http = 500, a->code = "INTERNAL", a->type = "text/plain";
		snprintf(a->body, sizeof a->body, "Internal Server Error");
		return 1;
	}
	if (c->v == V_BEARER) {
		a->http = 401, a->code = "UNAUTHORIZED";
		snprintf(a->body, sizeof a->body, "{\"code\":\"UNAUTHORIZED\"}");
		return 1;
	}
	return 0;
}

/* The API shapes --profile chooses from, each defined in its api_NAME.c;
 * the first is the default. */
static const struct shape *const shapes[] = {
	&shape_default, &shape_onelink, &shape_cisco, &shape_ctcmp, &shape_ct5gcmp,
};

/* The shape called name, or NULL. */
const struct shape *
shape_find(const char *name)
{
	for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
		if (!strcmp(name, shapes[i]->name))
			return shapes[i];
	return NULL;
}

/* Handle a complete request. Returns MHD_NO to drop the connection. */
static enum MHD_Result
handle(struct MHD_Connection *con, const char *method, const char *url, struct ctx *cx)
{
	struct call c;
	struct answer a;
	const char *bad;
	int http, admitted = 0;
	enum MHD_Result ret;

	if (!strncmp(url, "/_sim/", 6))
		return control(con, method, url);
	memset(&c, 0, sizeof c);
	memset(&a, 0, sizeof a);
	c.arrived = cx->arrived;
	if ((http = shape->parse(con, method, url, cx, &c, &bad)))
		return reply(con, http, bad, 0);

	/* Token fetches are not calls: neither rated nor in flight. */
	pthread_mutex_lock(&mu);
	if (c.v == V_NONE && c.kind != K_TOKEN) {
		if ((c.fault = admit(c.carrier, c.arrived)))
			c.v = V_RATE;
		else
			admitted = 1;
	}
	pthread_mutex_unlock(&mu);

	if (latency_ms > 0)
		sr_sleep_ms(latency_ms);

	pthread_mutex_lock(&mu);
	apply_due(now_ms()); /* what is due has landed, even if the applier is late */
	if (c.v == V_NONE)
		decide(&c);
	if (c.kind != K_TOKEN && c.card[0]) { /* (an order not found has no card) */
		c.state = card_get(c.card, c.carrier)->state;
		name_card(&c);
	}
	shape->answer(&c, &a);
	log_call(&c, &a);
	pthread_mutex_unlock(&mu);

	ret = MHD_NO;
	if (!c.drop) {
		if (c.slow)
			sr_sleep_ms(slow_ms);
		ret = reply_as(con, a.http, a.type, a.body, a.retry_after);
	}
	if (admitted)
		release(c.carrier);
	return ret;
}

/* A TCP connection: when it was accepted, and whether a request of it has
 * arrived yet (MHD's socket context). The monotonic clock, to the
 * nanosecond: a handshake measured in whole wall-clock milliseconds could
 * end up to a millisecond early, or far off when the wall clock is set. */
struct sock {
	struct timespec accepted;
	int served;
};

static void
on_connection(void *cls, struct MHD_Connection *con, void **sock_ctx,
    enum MHD_ConnectionNotificationCode toe)
{
	struct sock *s;

	(void)cls;
	(void)con;
	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		s = sr_malloc(sizeof *s);
		clock_gettime(CLOCK_MONOTONIC, &s->accepted);
		s->served = 0;
		*sock_ctx = s;
	} else {
		free(*sock_ctx);
		*sock_ctx = NULL;
	}
}

/* What stands between a client's send and the carrier's clock: the first
 * request of a connection arrives only once a handshake of --conn-delay-ms
 * is over, and every request is up to --jitter-ms late on the way. A client
 * pacing its sends to the rate still gets refused when these bunch its
 * arrivals together, as with a real carrier. */
static void
arrive(struct MHD_Connection *con)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(con, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct sock *s = ci ? ci->socket_context : NULL;
	int64_t jitter = 0;

	if (s && !s->served && conn_delay_ms > 0) {
		/* An absolute deadline: a handshake long over costs nothing. */
		struct timespec until = s->accepted;

		until.tv_sec += conn_delay_ms / 1000;
		until.tv_nsec += (conn_delay_ms % 1000) * 1000000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR)
			;
	}
	if (s)
		s->served = 1;
	if (jitter_ms > 0) {
		pthread_mutex_lock(&mu);
		jitter = rand_r(&jitter_seed) % (jitter_ms + 1);
		pthread_mutex_unlock(&mu);
	}
	sr_sleep_ms(jitter);
}

static enum MHD_Result
on_request(void *cls, struct MHD_Connection *con, const char *url, const char *method,
    const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	struct ctx *cx = *con_cls;

	(void)cls;
	(void)version;
	if (!cx) {
		cx = sr_malloc(sizeof *cx);
		memset(cx, 0, sizeof *cx);
		if (strncmp(url, "/_sim/", 6) != 0)
			arrive(con);
		cx->arrived = now_ms(); /* the carrier measures arrivals */
		*con_cls = cx;
		return MHD_YES;
	}
	if (*upload_size) {
		if (cx->len + *upload_size < 65536) {
			cx->body = sr_realloc(cx->body, cx->len + *upload_size + 1);
			memcpy(cx->body + cx->len, upload, *upload_size);
			cx->len += *upload_size;
			cx->body[cx->len] = '\0';
		}
		*upload_size = 0;
		return MHD_YES;
	}
	return handle(con, method, url, cx);
}

static void
on_done(void *cls, struct MHD_Connection *con, void **con_cls, enum MHD_RequestTerminationCode tc)
{
	struct ctx *cx = *con_cls;

	(void)cls;
	(void)con;
	(void)tc;
	if (cx) {
		free(cx->body);
		free(cx);
	}
	*con_cls = NULL;
}

/* Listen on 127.0.0.1:port (0: any free port): the daemon, or NULL. */
struct MHD_Daemon *
serve(long port)
{
	struct sockaddr_in addr;
	int slow;

	memset(&addr, 0, sizeof addr);
	addr.sin_family = AF_INET;
	addr.sin_port = htons((uint16_t)port);
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	/* Handlers that sleep (arrival delays, latency, slow answers) need a
	 * thread each, or one slow call would hold up every other call of its
	 * thread; otherwise a small pool of event-driven threads is far cheaper
	 * per connection. */
	slow = latency_ms > 0 || ptimeout_after > 0 || conn_delay_ms > 0 || jitter_ms > 0;
	return MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD |
	    (slow ? MHD_USE_THREAD_PER_CONNECTION : MHD_USE_EPOLL),
	    (uint16_t)port, NULL, NULL, on_request, NULL,
	    MHD_OPTION_THREAD_POOL_SIZE, (unsigned)(slow ? 0 : 2),
	    MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
	    MHD_OPTION_NOTIFY_COMPLETED, on_done, NULL,
	    MHD_OPTION_NOTIFY_CONNECTION, on_connection, NULL,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)60,
	    MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)1024,
	    MHD_OPTION_END);
}
