/*
 * The drop-in libibverbs.so.1: names of verbs values, and the rate
 * conversions (InfiniBand Architecture 9.11: static rates).
 */
#include "verbs_priv.h"

#define VC_ROWS(t) (sizeof(t) / sizeof((t)[0]))

static const char *vc_name(const char *const *rows, size_t n, unsigned v)
{
	return v < n && rows[v] ? rows[v] : "unknown";
}

const char *ibv_node_type_str(enum ibv_node_type node_type)
{
	static const char *const rows[] = {
		[IBV_NODE_CA] = "InfiniBand channel adapter",
		[IBV_NODE_SWITCH] = "InfiniBand switch",
		[IBV_NODE_ROUTER] = "InfiniBand router",
		[IBV_NODE_RNIC] = "iWARP NIC",
		[IBV_NODE_USNIC] = "usNIC",
		[IBV_NODE_USNIC_UDP] = "usNIC UDP",
		[IBV_NODE_UNSPECIFIED] = "unspecified",
	};

	return vc_name(rows, VC_ROWS(rows), (unsigned)node_type);
}

const char *ibv_port_state_str(enum ibv_port_state port_state)
{
	static const char *const rows[] = {
		[IBV_PORT_NOP] = "PORT_NOP",
		[IBV_PORT_DOWN] = "PORT_DOWN",
		[IBV_PORT_INIT] = "PORT_INIT",
		[IBV_PORT_ARMED] = "PORT_ARMED",
		[IBV_PORT_ACTIVE] = "PORT_ACTIVE",
		[IBV_PORT_ACTIVE_DEFER] = "PORT_ACTIVE_DEFER",
	};

	return vc_name(rows, VC_ROWS(rows), (unsigned)port_state);
}

const char *ibv_event_type_str(enum ibv_event_type event)
{
	static const char *const rows[] = {
		[IBV_EVENT_CQ_ERR] = "CQ error",
		[IBV_EVENT_QP_FATAL] = "local work queue catastrophic error",
		[IBV_EVENT_QP_REQ_ERR] = "invalid request local work queue "
					 "error",
		[IBV_EVENT_QP_ACCESS_ERR] = "local access violation work queue "
					    "error",
		[IBV_EVENT_COMM_EST] = "communication established",
		[IBV_EVENT_SQ_DRAINED] = "send queue drained",
		[IBV_EVENT_PATH_MIG] = "path migrated",
		[IBV_EVENT_PATH_MIG_ERR] = "path migration request error",
		[IBV_EVENT_DEVICE_FATAL] = "local catastrophic error",
		[IBV_EVENT_PORT_ACTIVE] = "port active",
		[IBV_EVENT_PORT_ERR] = "port error",
		[IBV_EVENT_LID_CHANGE] = "LID change",
		[IBV_EVENT_PKEY_CHANGE] = "P_Key change",
		[IBV_EVENT_SM_CHANGE] = "SM change",
		[IBV_EVENT_SRQ_ERR] = "SRQ catastrophic error",
		[IBV_EVENT_SRQ_LIMIT_REACHED] = "SRQ limit reached",
		[IBV_EVENT_QP_LAST_WQE_REACHED] = "last WQE reached",
		[IBV_EVENT_CLIENT_REREGISTER] = "client reregistration",
		[IBV_EVENT_GID_CHANGE] = "GID table change",
		[IBV_EVENT_WQ_FATAL] = "WQ fatal",
	};

	return vc_name(rows, VC_ROWS(rows), (unsigned)event);
}

const char *ibv_wc_status_str(enum ibv_wc_status status)
{
	static const char *const rows[] = {
		[IBV_WC_SUCCESS] = "success",
		[IBV_WC_LOC_LEN_ERR] = "local length error",
		[IBV_WC_LOC_QP_OP_ERR] = "local QP operation error",
		[IBV_WC_LOC_EEC_OP_ERR] = "local EE context operation error",
		[IBV_WC_LOC_PROT_ERR] = "local protection error",
		[IBV_WC_WR_FLUSH_ERR] = "work request flushed error",
		[IBV_WC_MW_BIND_ERR] = "memory window bind error",
		[IBV_WC_BAD_RESP_ERR] = "bad response error",
		[IBV_WC_LOC_ACCESS_ERR] = "local access error",
		[IBV_WC_REM_INV_REQ_ERR] = "remote invalid request error",
		[IBV_WC_REM_ACCESS_ERR] = "remote access error",
		[IBV_WC_REM_OP_ERR] = "remote operation error",
		[IBV_WC_RETRY_EXC_ERR] = "transport retry counter exceeded",
		[IBV_WC_RNR_RETRY_EXC_ERR] = "RNR retry counter exceeded",
		[IBV_WC_LOC_RDD_VIOL_ERR] = "local RDD violation error",
		[IBV_WC_REM_INV_RD_REQ_ERR] = "remote invalid RD request",
		[IBV_WC_REM_ABORT_ERR] = "operation aborted",
		[IBV_WC_INV_EECN_ERR] = "invalid EE context number",
		[IBV_WC_INV_EEC_STATE_ERR] = "invalid EE context state",
		[IBV_WC_FATAL_ERR] = "fatal error",
		[IBV_WC_RESP_TIMEOUT_ERR] = "response timeout error",
		[IBV_WC_GENERAL_ERR] = "general error",
		[IBV_WC_TM_ERR] = "tag matching error",
		[IBV_WC_TM_RNDV_INCOMPLETE] = "tag matching rendezvous "
					      "incomplete",
	};

	return vc_name(rows, VC_ROWS(rows), (unsigned)status);
}

/* One row per static rate: its speed in Mb/s. */
static const int vc_rate_mbps[] = {
	[IBV_RATE_2_5_GBPS] = 2500,	[IBV_RATE_5_GBPS] = 5000,
	[IBV_RATE_10_GBPS] = 10000,	[IBV_RATE_20_GBPS] = 20000,
	[IBV_RATE_30_GBPS] = 30000,	[IBV_RATE_40_GBPS] = 40000,
	[IBV_RATE_60_GBPS] = 60000,	[IBV_RATE_80_GBPS] = 80000,
	[IBV_RATE_120_GBPS] = 120000,	[IBV_RATE_14_GBPS] = 14062,
	[IBV_RATE_56_GBPS] = 56250,	[IBV_RATE_112_GBPS] = 112500,
	[IBV_RATE_168_GBPS] = 168750,	[IBV_RATE_25_GBPS] = 25781,
	[IBV_RATE_100_GBPS] = 103125,	[IBV_RATE_200_GBPS] = 206250,
	[IBV_RATE_300_GBPS] = 309375,	[IBV_RATE_28_GBPS] = 28125,
	[IBV_RATE_50_GBPS] = 53125,	[IBV_RATE_400_GBPS] = 425000,
	[IBV_RATE_600_GBPS] = 637500,	[IBV_RATE_800_GBPS] = 850000,
	[IBV_RATE_1200_GBPS] = 1275000,
};

int ibv_rate_to_mbps(enum ibv_rate rate)
{
	return (unsigned)rate < VC_ROWS(vc_rate_mbps) && vc_rate_mbps[rate] ?
	       vc_rate_mbps[rate] : -1;
}

enum ibv_rate mbps_to_ibv_rate(int mbps)
{
	size_t i;

	for (i = 0; i < VC_ROWS(vc_rate_mbps); i++)
		if (vc_rate_mbps[i] && vc_rate_mbps[i] == mbps)
			return (enum ibv_rate)i;
	return IBV_RATE_MAX;
}

/* The multiple of 2.5 Gb/s, for the rates of SDR, DDR and QDR lanes
 * (the original InfiniBand rates, all multiples of 2.5 Gb/s). */
int ibv_rate_to_mult(enum ibv_rate rate)
{
	int m = ibv_rate_to_mbps(rate);

	return m > 0 && rate <= IBV_RATE_120_GBPS && m % 2500 == 0 ?
	       m / 2500 : -1;
}

enum ibv_rate mult_to_ibv_rate(int mult)
{
	return mult > 0 && mult <= 48 ? mbps_to_ibv_rate(mult * 2500) :
	       IBV_RATE_MAX;
}
