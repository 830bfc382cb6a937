// A Tradewind task client for Node.js: the framed protocol of docs/protocol.md, nothing else.
//
// The supervisor starts the task with a socket inherited on the file descriptor named by
// TRADEWIND_COMMS_FD. Every frame is a 4-byte big-endian length, then that many bytes of UTF-8
// JSON. The task only asks: each request carries an `id`, and exactly one reply comes back with
// that id. Logs are plain stdout/stderr lines; the supervisor copies them to the try's log.
"use strict";

const net = require("net");

const PROTOCOL_VERSION = 1;

// The supervisor answered with ErrorResponse; the message is its `error`.
class RequestFailed extends Error {
  constructor(message) {
    super(message);
    this.name = "RequestFailed";
  }
}

class TradewindClient {
  constructor(fd) {
    this.socket = new net.Socket({ fd, readable: true, writable: true });
    this.chunks = []; // what arrived and is not a whole frame yet
    this.buffered = 0;
    this.expected = null; // the body length of the frame being read
    this.nextId = 0;
    this.pending = new Map();
    this.socket.on("data", (chunk) => this.onData(chunk));
    this.socket.on("close", () => this.failPending(new Error("the supervisor closed the channel")));
    this.socket.on("error", (error) => this.failPending(error));
  }

  static fromEnv() {
    const fd = Number.parseInt(process.env.TRADEWIND_COMMS_FD ?? "", 10);
    if (Number.isNaN(fd)) {
      throw new Error("TRADEWIND_COMMS_FD is not set: run this task under a Tradewind supervisor");
    }
    return new TradewindClient(fd);
  }

  // Chunks are joined once per frame: joining on every chunk would copy a 64 MiB reply
  // a thousand times over (a minute, measured).
  onData(chunk) {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    for (;;) {
      if (this.expected === null) {
        if (this.buffered < 4) return;
        this.expected = this.take(4).readUInt32BE(0);
      }
      if (this.buffered < this.expected) return;
      const body = this.take(this.expected);
      this.expected = null;
      this.onFrame(JSON.parse(body.toString("utf8")));
    }
  }

  take(size) {
    const all = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks, this.buffered);
    const rest = all.subarray(size);
    this.chunks = rest.length > 0 ? [rest] : [];
    this.buffered = rest.length;
    return all.subarray(0, size);
  }

  onFrame(reply) {
    const waiter = this.pending.get(reply.id);
    this.pending.delete(reply.id);
    if (waiter === undefined) return; // not ours: the protocol never sends one
    if (reply.type === "ErrorResponse") waiter.reject(new RequestFailed(reply.error));
    else waiter.resolve(reply);
  }

  failPending(error) {
    for (const waiter of this.pending.values()) waiter.reject(error);
    this.pending.clear();
  }

  request(message) {
    this.nextId += 1;
    const body = Buffer.from(JSON.stringify({ ...message, id: this.nextId }), "utf8");
    const header = Buffer.alloc(4);
    header.writeUInt32BE(body.length, 0);
    return new Promise((resolve, reject) => {
      this.pending.set(this.nextId, { resolve, reject });
      this.socket.write(Buffer.concat([header, body]));
    });
  }

  // --- the handshake: who am I, with my upstream XComs already resolved in `arguments` ---
  async start() {
    return this.request({ type: "GetTaskDetails", protocol_version: PROTOCOL_VERSION });
  }

  // --- XComs ---
  async getXCom(taskId, key = "return_value", mapIndex = null) {
    const reply = await this.request({ type: "GetXCom", task_id: taskId, key, map_index: mapIndex });
    return reply.found ? reply.value : null;
  }

  async setXCom(key, value) {
    await this.request({ type: "SetXCom", key, value });
  }

  // --- the task instance's state store ---
  async getStateValue(key) {
    const reply = await this.request({ type: "GetStateValue", key });
    return reply.found ? reply.value : null;
  }

  async setStateValue(key, value) {
    await this.request({ type: "SetStateValue", key, value });
  }

  async deleteStateValue(key) {
    await this.request({ type: "DeleteStateValue", key });
  }

  // --- connections, variables, secrets ---
  async getConnection(connId) {
    return this.request({ type: "GetConnection", conn_id: connId });
  }

  async getVariable(key) {
    const reply = await this.request({ type: "GetVariable", key });
    return reply.found ? reply.value : null;
  }

  async maskSecret(value) {
    await this.request({ type: "MaskSecret", value });
  }

  // --- how the try ended ---
  async succeed() {
    await this.request({ type: "SucceedTask" });
  }

  async fail(error, retryable = true) {
    await this.request({ type: "FailTask", error: String(error), retryable });
  }

  async skip(reason = "") {
    await this.request({ type: "SkipTask", reason });
  }

  // The supervisor keeps its end open until this process exits: end() alone would wait for it.
  close() {
    this.socket.destroy();
  }
}

// Run `body(client, details)` as a task: its return value becomes the `return_value` XCom,
// an exception fails the try (with its message), and the process exits when the reply is in.
async function runTask(body) {
  const client = TradewindClient.fromEnv();
  let code = 0;
  try {
    const details = await client.start();
    try {
      const result = await body(client, details);
      if (result !== undefined && result !== null) await client.setXCom("return_value", result);
      await client.succeed();
    } catch (error) {
      console.error(error && error.stack ? error.stack : String(error));
      await client.fail(error instanceof Error ? `${error.name}: ${error.message}` : String(error));
      code = 1;
    }
  } finally {
    client.close();
  }
  process.exitCode = code;
}

module.exports = { PROTOCOL_VERSION, RequestFailed, TradewindClient, runTask };
