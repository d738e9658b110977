/*
 * uiwarp connection manager: listen, connect, accept, reject and
 * disconnect over TCP (IPv4 and IPv6) with MPA startup (RFC 5044 §7),
 * modelled on librdmacm.  Everything is asynchronous; events are read
 * from a channel whose fd becomes readable when one is pending.
 */
#ifndef UIWARP_CM_H
#define UIWARP_CM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#ifdef __cplusplus
extern "C" {
#endif

struct uiw_device;
struct uiw_qp;
struct uiw_cm_channel;
struct uiw_cm_id;

#define UIW_MPA_PRIVATE_DATA_MAX 512

enum uiw_opt { UIW_OPT_DEFAULT = 0, UIW_OPT_OFF = 1, UIW_OPT_ON = 2 };

/* How the connection runs.  A zeroed struct gives the defaults. */
struct uiw_conn_param {
	const void *private_data;
	uint16_t private_data_len;  /* at most UIW_MPA_PRIVATE_DATA_MAX */
	uint8_t mpa_rev;            /* 0: default (1 until revision 2 exists) */
	enum uiw_opt crc;           /* default ON (RFC 5044 §4.4) */
	enum uiw_opt markers;       /* markers we ask the peer to send: default OFF */
	uint32_t ird;               /* 0: the QP's/device default */
	uint32_t ord;
	int timeout_ms;             /* MPA startup timeout; 0: 10000 */
};

enum uiw_cm_event_type {
	UIW_CM_EVENT_CONNECT_REQUEST = 0, /* on a listener: ev.id is new */
	UIW_CM_EVENT_ESTABLISHED,
	UIW_CM_EVENT_REJECTED,        /* peer rejected; private data in ev */
	UIW_CM_EVENT_CONNECT_ERROR,   /* ev.status: -ETIMEDOUT, -ECONNREFUSED, -EPROTO ... */
	UIW_CM_EVENT_DISCONNECTED,    /* the connection ended (either side) */
	UIW_CM_EVENT_TIMEWAIT_EXIT,
};
const char *uiw_cm_event_str(enum uiw_cm_event_type type);

struct uiw_cm_event {
	enum uiw_cm_event_type type;
	struct uiw_cm_id *id;         /* the id the event is about */
	struct uiw_cm_id *listen_id;  /* CONNECT_REQUEST: the listener */
	int status;                   /* 0 or -errno */
	/* The peer's private data (CONNECT_REQUEST, ESTABLISHED, REJECTED);
	 * valid until the next uiw_cm_get_event on the channel. */
	const void *private_data;
	uint16_t private_data_len;
	/* The peer's MPA negotiation as received. */
	uint8_t mpa_rev;
	uint8_t peer_crc;             /* peer asked for CRC */
	uint8_t peer_markers;         /* peer asked for markers */
	uint32_t peer_ird, peer_ord;  /* 0 when the peer did not say */
};

struct uiw_cm_channel *uiw_cm_channel_create(struct uiw_device *dev);
int uiw_cm_channel_destroy(struct uiw_cm_channel *ch); /* -EBUSY with ids left */
int uiw_cm_channel_fd(struct uiw_cm_channel *ch);
/* Takes the next event.  timeout_ms: 0 non-blocking (-EAGAIN when none),
 * -1 blocks.  Returns 0 or -errno (-ETIMEDOUT). */
int uiw_cm_get_event(struct uiw_cm_channel *ch, struct uiw_cm_event *ev,
		     int timeout_ms);

/* Listens on addr (port 0 picks one; see uiw_cm_local_addr). */
int uiw_cm_listen(struct uiw_cm_channel *ch, const struct sockaddr *addr,
		  socklen_t addrlen, int backlog, struct uiw_cm_id **listen_id);
/* How long a listener waits for a new connection's MPA Request before it
 * closes it (ms; 0: the default, 10000).  At most backlog connections
 * wait for their Request at a time (RFC 5044 §7.1.2 rules 8 and 10). */
int uiw_cm_set_startup_timeout(struct uiw_cm_id *listen_id, int timeout_ms);
/* Connects qp to dst; events go to ch. */
int uiw_cm_connect(struct uiw_cm_channel *ch, struct uiw_qp *qp,
		   const struct sockaddr *dst, socklen_t dstlen,
		   const struct uiw_conn_param *param, struct uiw_cm_id **id);
/* Accepts a CONNECT_REQUEST id on qp.  ESTABLISHED follows. */
int uiw_cm_accept(struct uiw_cm_id *id, struct uiw_qp *qp,
		  const struct uiw_conn_param *param);
/* Rejects a CONNECT_REQUEST id with an MPA Reply that has R set. */
int uiw_cm_reject(struct uiw_cm_id *id, const void *private_data,
		  uint16_t private_data_len);
/* Graceful close: the QP goes to Closing, then Idle/Error with flushed WRs. */
int uiw_cm_disconnect(struct uiw_cm_id *id);
/* Frees an id (and stops a listener).  The QP stays with its owner. */
int uiw_cm_destroy_id(struct uiw_cm_id *id);

struct uiw_qp *uiw_cm_id_qp(struct uiw_cm_id *id);
void *uiw_cm_id_context(struct uiw_cm_id *id);
void uiw_cm_id_set_context(struct uiw_cm_id *id, void *ctx);
int uiw_cm_local_addr(struct uiw_cm_id *id, struct sockaddr_storage *ss);
int uiw_cm_peer_addr(struct uiw_cm_id *id, struct sockaddr_storage *ss);

/* Resolves "host" + "port" (numeric or names, IPv4/IPv6) to a sockaddr. */
int uiw_resolve(const char *host, const char *port, int passive,
		struct sockaddr_storage *ss, socklen_t *len);

#ifdef __cplusplus
}
#endif

#endif
