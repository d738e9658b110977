-- DDP over SCTP (RFC 5043) for Wireshark/tshark 4.0:
--   tshark -X lua_script:tests/wire/ddp_sctp.lua -o sctp.checksum:crc-32c ...
--
-- Wireshark names PPIDs 16 and 17 but leaves their payload as data, and
-- its DDP/RDMAP dissector cannot be put on sctp.ppi directly: RFC 5043
-- §5.2.1 puts a 2-octet DDP-SSN in front of every chunk.  This takes the
-- DDP-SSN, decodes Session Control chunks (§5.2.3, with the Enhanced
-- function codes and IRD/ORD word of RFC 6581 §7 and §9), and hands the
-- DDP segment of a DDP Segment Chunk (§5.2.2) to iwarp_ddp_rdmap, so that
-- iwarp_ddp.* and iwarp_rdma.* fields appear as they do over MPA.
--
-- Nothing here reads past what was captured.  A chunk too short for
-- what it must hold gets an expert error that says what is missing (the
-- Malformed group: tshark's _ws.malformed matches it too) instead of an
-- exception; a chunk that the capture cut short (snap length) is decoded
-- as far as it was captured, without an error of this dissector.  The
-- payload heuristics that iwarp_ddp_rdmap tries on a
-- Send's payload (RPC-over-RDMA, SMB Direct) may misread test patterns:
-- turn them off with --disable-heuristic rpcrdma_iwarp and
-- --disable-heuristic smb_direct_iwarp.

local ddp_sctp = Proto("ddp_sctp", "DDP over SCTP (RFC 5043)")

local PPID_SEG = 16      -- RFC 5043 §5.2: DDP Segment Chunk
local PPID_CTL = 17      -- RFC 5043 §5.2: DDP Stream Session Control
local SSN_LEN = 2        -- §5.2.1
local CTL_HDR_LEN = 4    -- §5.2.3: DDP-SSN and Function Code
local PD_MAX = 512       -- §5.2.3, and RFC 6581 §7 with the IRD/ORD word
local IRD_ORD_LEN = 4    -- RFC 6581 §9
local DDP_TAGGED_LEN = 14    -- RFC 5041 §4.2
local DDP_UNTAGGED_LEN = 18  -- RFC 5041 §4.3

local FC_TERMINATE = 4
local fc_names = {
	[1] = "DDP Stream Session Initiate",
	[2] = "DDP Stream Session Accept",
	[3] = "DDP Stream Session Reject",
	[4] = "DDP Stream Session Terminate",
	-- RFC 6581 §7
	[5] = "Enhanced DDP Stream Session Initiate",
	[6] = "Enhanced DDP Stream Session Accept",
	[7] = "Enhanced DDP Stream Session Reject",
}
-- RFC 6581 §7 and §9: the IRD/ORD word leads the private data of the
-- Enhanced Initiate and Accept; uiwarp's Enhanced Reject carries it too,
-- naming what the responder would take, as an MPA v2 Reply with Reject
-- set does (src/wire/ddps.h).
local fc_ird_ord = { [5] = true, [6] = true, [7] = true }

local f = {
	ssn = ProtoField.uint16("ddp_sctp.ssn", "DDP-SSN", base.DEC),
	fc = ProtoField.uint16("ddp_sctp.fc", "Function Code", base.DEC, fc_names),
	pd_len = ProtoField.uint16("ddp_sctp.pd_len", "Private Data length", base.DEC),
	pd = ProtoField.bytes("ddp_sctp.pd", "Private Data"),
	ird_ord = ProtoField.uint32("ddp_sctp.ird_ord", "IRD/ORD", base.HEX),
	-- RFC 6581 §9: A and B share the IRD half, C and D the ORD half
	peer2peer = ProtoField.bool("ddp_sctp.peer2peer", "A: peer-to-peer connection model", 16, nil, 0x8000),
	rtr_send = ProtoField.bool("ddp_sctp.rtr_send", "B: zero-length Send RTR", 16, nil, 0x4000),
	ird = ProtoField.uint16("ddp_sctp.ird", "IRD", base.DEC, nil, 0x3fff),
	rtr_write = ProtoField.bool("ddp_sctp.rtr_write", "C: zero-length RDMA Write RTR", 16, nil, 0x8000),
	rtr_read = ProtoField.bool("ddp_sctp.rtr_read", "D: zero-length RDMA Read RTR", 16, nil, 0x4000),
	ord = ProtoField.uint16("ddp_sctp.ord", "ORD", base.DEC, nil, 0x3fff),
}
ddp_sctp.fields = {
	f.ssn, f.fc, f.pd_len, f.pd, f.ird_ord, f.peer2peer, f.rtr_send,
	f.ird, f.rtr_write, f.rtr_read, f.ord,
}

-- Expert errors, as ex.<name>, filterable as ddp_sctp.<name>
local ex, experts = {}, {}
for _, e in ipairs({
	{ "short_chunk", "Chunk shorter than its DDP-SSN (RFC 5043 §5.2.1)", expert.group.MALFORMED },
	{ "short_ctl", "Session Control chunk without a Function Code (RFC 5043 §5.2.3)", expert.group.MALFORMED },
	{ "unknown_fc", "Unknown Function Code (RFC 5043 §5.2.3, RFC 6581 §7)", expert.group.PROTOCOL },
	{ "term_pd", "Private Data in a Session Terminate (RFC 5043 §5.2.3)", expert.group.PROTOCOL },
	{ "pd_too_long", "Private Data longer than 512 octets (RFC 5043 §5.2.3)", expert.group.PROTOCOL },
	{ "no_ird_ord", "Enhanced Initiate or Accept without the IRD/ORD word (RFC 6581 §7)",
	  expert.group.MALFORMED },
	{ "short_ddp", "DDP segment shorter than its DDP header (RFC 5041 §4)", expert.group.MALFORMED },
}) do
	ex[e[1]] = ProtoExpert.new("ddp_sctp." .. e[1], e[2], e[3], expert.severity.ERROR)
	table.insert(experts, ex[e[1]])
end
ddp_sctp.experts = experts

local iwarp = Dissector.get("iwarp_ddp_rdmap")
local ppi_field = Field.new("sctp.data_payload_proto_id")

-- The PPID of the chunk at hand: the sctp.ppi table tells it in
-- match_uint; reached some other way (Decode As on a port), the last
-- PPID SCTP put in the tree is this chunk's.
local function chunk_ppid(pinfo)
	local m = pinfo.match_uint
	if m == PPID_SEG or m == PPID_CTL then
		return m
	end
	local all = { ppi_field() }
	if #all > 0 then
		return all[#all].value
	end
	return nil
end

-- SCTP puts each chunk's name in the Info column and fences it
-- (bundled chunks, RFC 4960 §6.10, follow one another); iwarp_ddp_rdmap
-- sets the column, which would wipe out what came before it: fence
-- that, and end with a space, as SCTP does, for the next chunk's name.
local function info_begin(pinfo)
	pinfo.cols.info:fence()
end
local function info_end(pinfo)
	pinfo.cols.info:append(" ")
end

local function dissect_segment(tvb, pinfo, tree, item, avail, reported)
	item:append_text(", DDP Segment Chunk")
	if reported <= SSN_LEN then
		item:add_proto_expert_info(ex.short_ddp, "DDP segment of 0 octets")
		return
	end
	if avail <= SSN_LEN then
		return
	end
	-- RFC 5041 §4.1: the T flag in the first octet says which header
	local tagged = bit32.band(tvb(SSN_LEN, 1):uint(), 0x80) ~= 0
	local need = tagged and DDP_TAGGED_LEN or DDP_UNTAGGED_LEN
	local have = reported - SSN_LEN
	if have < need then
		item:add_proto_expert_info(ex.short_ddp, string.format(
			"DDP segment of %d octets, its %s header needs %d", have,
			tagged and "tagged" or "untagged", need))
		return
	end
	-- A segment too short for its RDMAP header (a Read Request's or a
	-- Terminate's) makes iwarp_ddp_rdmap throw: Wireshark marks the
	-- frame malformed, which is the report wanted (and a capture cut
	-- short, as such); pcall keeps that from becoming a Lua error on
	-- top of it.
	info_begin(pinfo)
	pcall(iwarp.call, iwarp, tvb(SSN_LEN):tvb(), pinfo, tree)
	info_end(pinfo)
end

local function dissect_ird_ord(tvb, tree, at)
	local word = tree:add(f.ird_ord, tvb(at, IRD_ORD_LEN))
	word:add(f.peer2peer, tvb(at, 2))
	word:add(f.rtr_send, tvb(at, 2))
	word:add(f.ird, tvb(at, 2))
	word:add(f.rtr_write, tvb(at + 2, 2))
	word:add(f.rtr_read, tvb(at + 2, 2))
	word:add(f.ord, tvb(at + 2, 2))
	return bit32.band(tvb(at, 2):uint(), 0x3fff), bit32.band(tvb(at + 2, 2):uint(), 0x3fff)
end

local function dissect_control(tvb, pinfo, item, avail, reported)
	item:append_text(", Session Control")
	if reported < CTL_HDR_LEN then
		item:add_proto_expert_info(ex.short_ctl, string.format(
			"Session Control chunk of %d octets, at least %d needed", reported, CTL_HDR_LEN))
		return
	end
	if avail < CTL_HDR_LEN then
		return
	end
	local fc = tvb(SSN_LEN, 2):uint()
	local fc_item = item:add(f.fc, tvb(SSN_LEN, 2))
	local name = fc_names[fc]
	local info = (name or string.format("Unknown Function Code %d", fc))
		.. ", DDP-SSN " .. tvb(0, SSN_LEN):uint()
	if not name then
		fc_item:add_proto_expert_info(ex.unknown_fc, "Unknown Function Code " .. fc)
	end

	-- The chunk ends the private data (§5.2.3 gives it no length field).
	local pd_len = reported - CTL_HDR_LEN
	local len_item = item:add(f.pd_len, pd_len)
	len_item:set_generated()
	local pd_item
	if pd_len > 0 and avail > CTL_HDR_LEN then
		pd_item = item:add(f.pd, tvb(CTL_HDR_LEN))
	end
	if fc == FC_TERMINATE and pd_len > 0 then
		len_item:add_proto_expert_info(ex.term_pd)
	end
	if pd_len > PD_MAX then
		len_item:add_proto_expert_info(ex.pd_too_long,
			string.format("Private Data of %d octets, at most %d allowed", pd_len, PD_MAX))
	end
	if fc_ird_ord[fc] then
		if pd_len < IRD_ORD_LEN then
			len_item:add_proto_expert_info(ex.no_ird_ord, string.format(
				"%d octets of Private Data, the IRD/ORD word needs %d", pd_len, IRD_ORD_LEN))
		elseif avail >= CTL_HDR_LEN + IRD_ORD_LEN then
			local ird, ord = dissect_ird_ord(tvb, pd_item, CTL_HDR_LEN)
			info = info .. string.format(", IRD %d, ORD %d", ird, ord)
		end
	end
	info_begin(pinfo)
	pinfo.cols.info:append(info)
	info_end(pinfo)
end

function ddp_sctp.dissector(tvb, pinfo, tree)
	-- reported: what the chunk carried, which the checks judge;
	-- avail: what was captured of it, all that may be read
	local reported, avail = tvb:reported_len(), tvb:len()
	local ppid = chunk_ppid(pinfo)
	local item
	pinfo.cols.protocol = "DDP/SCTP"
	if avail < SSN_LEN then
		item = tree:add(ddp_sctp)
		if reported < SSN_LEN then
			item:add_proto_expert_info(ex.short_chunk, string.format(
				"Chunk of %d octets, the DDP-SSN needs %d", reported, SSN_LEN))
		end
		return avail
	end
	-- over the DDP-SSN only for a segment chunk, whose DDP/RDMAP tree
	-- follows; over the whole chunk for Session Control
	item = tree:add(ddp_sctp, ppid == PPID_SEG and tvb(0, SSN_LEN) or tvb())
	item:add(f.ssn, tvb(0, SSN_LEN))
	item:append_text(", DDP-SSN: " .. tvb(0, SSN_LEN):uint())
	if ppid == PPID_CTL then
		dissect_control(tvb, pinfo, item, avail, reported)
	else
		dissect_segment(tvb, pinfo, tree, item, avail, reported)
	end
	return avail
end

local ppi_table = DissectorTable.get("sctp.ppi")
ppi_table:add(PPID_SEG, ddp_sctp)
ppi_table:add(PPID_CTL, ddp_sctp)
