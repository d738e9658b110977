/*
 * The SCTP carriers' common part: one stack per backend and process,
 * reference counted, and the calls of sctp.h dispatched to the backend
 * (sctp_backend.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "sctp_backend.h"

#define STACK(s) ((struct uiw_sctp_stack_base *)(s))
#define ASSOC(a) ((struct uiw_sctp_assoc_base *)(a))
#define LSN(l)   ((struct uiw_sctp_lsn_base *)(l))

#include "../rt/rt.h"

static pthread_mutex_t stacks_lock = PTHREAD_MUTEX_INITIALIZER;
static struct uiw_sctp_stack *stacks[2];
/* A carrier put in place of a backend (uiw_sctp_set_backend). */
static const struct uiw_sctp_ops *replaced[2];
static void (*_Atomic quiesce)(struct uiw_sctp_stack *s);

void uiw_sctp_set_quiesce(void (*fn)(struct uiw_sctp_stack *s))
{
	quiesce = fn;
}

void uiw_sctp_quiesce_run(struct uiw_sctp_stack *s)
{
	void (*fn)(struct uiw_sctp_stack *s) = quiesce;

	if (fn)
		fn(s);
}

void uiw_sctp_set_backend(enum uiw_sctp_kind kind,
			  const struct uiw_sctp_ops *ops)
{
	if (kind != UIW_SCTP_USER && kind != UIW_SCTP_KERNEL)
		return;
	pthread_mutex_lock(&stacks_lock);
	/* A stack keeps the table it was made with: the swap waits for
	 * none to exist, as the declaration says. */
	if (!stacks[kind])
		replaced[kind] = ops;
	pthread_mutex_unlock(&stacks_lock);
}

/* stacks_lock held. */
static const struct uiw_sctp_ops *backend(enum uiw_sctp_kind kind)
{
	if ((kind == UIW_SCTP_USER || kind == UIW_SCTP_KERNEL) &&
	    replaced[kind])
		return replaced[kind];
	switch (kind) {
	case UIW_SCTP_USER:   return &uiw_sctp_usr_ops;
	case UIW_SCTP_KERNEL: return &uiw_sctp_kern_ops;
	}
	return NULL;
}

int uiw_sctp_stack_get(enum uiw_sctp_kind kind,
		       const struct uiw_sctp_config *cfg,
		       struct uiw_sctp_stack **out)
{
	const struct uiw_sctp_ops *ops;
	struct uiw_sctp_config def = { 0 };
	int ret = 0;

	pthread_mutex_lock(&stacks_lock);
	ops = backend(kind);
	if (!ops) {
		pthread_mutex_unlock(&stacks_lock);
		return -EINVAL;
	}
	if (!stacks[kind]) {
		struct uiw_sctp_stack *s = NULL;

		def = cfg ? *cfg : def;
		if (!def.udp_port)
			def.udp_port = UIW_SCTP_UDP_PORT;
		if (!def.streams)
			def.streams = UIW_SCTP_STREAMS_DEF;
		ret = ops->create(&def, &s);
		if (ret == 0) {
			STACK(s)->ops = ops;
			STACK(s)->kind = kind;
			STACK(s)->cfg = def;
			stacks[kind] = s;
		}
	}
	if (ret == 0) {
		STACK(stacks[kind])->refs++;
		*out = stacks[kind];
	}
	pthread_mutex_unlock(&stacks_lock);
	return ret;
}

/* Whoever holds a listener or an association holds a reference too, so
 * the last put finds the stack without users. */
void uiw_sctp_stack_put(struct uiw_sctp_stack *s)
{
	struct uiw_sctp_stack_base *b = STACK(s);

	/* Under the lock to the end, so that a get meanwhile starts a new
	 * stack only after this one has stopped (usrsctp is one per
	 * process). */
	pthread_mutex_lock(&stacks_lock);
	if (--b->refs == 0) {
		stacks[b->kind] = NULL;
		b->ops->destroy(s);
	}
	pthread_mutex_unlock(&stacks_lock);
}

struct uiw_rt *uiw_sctp_stack_rt(struct uiw_sctp_stack *s)
{
	return STACK(s)->rt;
}

enum uiw_sctp_kind uiw_sctp_stack_kind(const struct uiw_sctp_stack *s)
{
	return ((const struct uiw_sctp_stack_base *)s)->kind;
}

const struct uiw_sctp_config *uiw_sctp_stack_config(
	const struct uiw_sctp_stack *s)
{
	return &((const struct uiw_sctp_stack_base *)s)->cfg;
}

int uiw_sctp_listen(struct uiw_sctp_stack *s, const struct sockaddr *sa,
		    socklen_t salen, int backlog,
		    const struct uiw_sctp_up *up, void *ctx,
		    struct uiw_sctp_lsn **out)
{
	return STACK(s)->ops->listen(s, sa, salen, backlog, up, ctx, out);
}

void uiw_sctp_lsn_addr(const struct uiw_sctp_lsn *l,
		       struct sockaddr_storage *ss)
{
	const struct uiw_sctp_lsn_base *b = (const void *)l;

	STACK(b->stack)->ops->lsn_addr(l, ss);
}

void uiw_sctp_unlisten(struct uiw_sctp_lsn *l)
{
	STACK(LSN(l)->stack)->ops->unlisten(l);
}

int uiw_sctp_connect(struct uiw_sctp_stack *s, const struct sockaddr *peer,
		     socklen_t peerlen, const struct sockaddr *local,
		     socklen_t locallen, uint16_t udp_port,
		     const struct uiw_sctp_up *up, void *ctx,
		     struct uiw_sctp_assoc **out)
{
	return STACK(s)->ops->connect(s, peer, peerlen, local, locallen,
				      udp_port ? udp_port :
				      STACK(s)->cfg.udp_port, up, ctx, out);
}

void uiw_sctp_assoc_bind(struct uiw_sctp_assoc *a,
			 const struct uiw_sctp_up *up, void *ctx)
{
	const struct uiw_sctp_ops *ops = STACK(ASSOC(a)->stack)->ops;

	ASSOC(a)->up = up;
	ASSOC(a)->ctx = ctx;
	if (ops->bind)
		ops->bind(a);
}

const struct uiw_sctp_info *uiw_sctp_assoc_info(
	const struct uiw_sctp_assoc *a)
{
	return &((const struct uiw_sctp_assoc_base *)a)->info;
}

int uiw_sctp_send(struct uiw_sctp_assoc *a, uint16_t sid, uint32_t ppid,
		  const struct iovec *iov, int iovcnt)
{
	return STACK(ASSOC(a)->stack)->ops->send(a, sid, ppid, iov, iovcnt);
}

int uiw_sctp_unacked(struct uiw_sctp_assoc *a)
{
	return STACK(ASSOC(a)->stack)->ops->unacked(a);
}

void uiw_sctp_watch_dry(struct uiw_sctp_assoc *a)
{
	STACK(ASSOC(a)->stack)->ops->watch_dry(a);
}

void uiw_sctp_shutdown(struct uiw_sctp_assoc *a)
{
	STACK(ASSOC(a)->stack)->ops->shutdown(a);
}

void uiw_sctp_abort(struct uiw_sctp_assoc *a)
{
	STACK(ASSOC(a)->stack)->ops->abort(a);
}

void uiw_sctp_buf_free(struct uiw_sctp_stack *s, void *buf)
{
	STACK(s)->ops->buf_free(s, buf);
}
