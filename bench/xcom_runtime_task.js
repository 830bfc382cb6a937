// The runtime task of bench/xcom_backends.py: pushes or pulls one value and times it.
"use strict";

const path = require("path");
const { runTask } = require(path.join(__dirname, "../examples/runtimes/tradewind_client"));

runTask(async (client, details) => {
  const { op, size, source } = details.arguments;
  if (op === "push") {
    const value = "x".repeat(size - 2); // its JSON is `size` bytes
    const started = process.hrtime.bigint();
    await client.setXCom("value", value);
    console.log(`BENCH push ${Number(process.hrtime.bigint() - started) / 1e9}`);
  } else {
    const started = process.hrtime.bigint();
    const value = await client.getXCom(source, "value");
    console.log(`BENCH pull ${Number(process.hrtime.bigint() - started) / 1e9}`);
    if (value.length !== size - 2) throw new Error(`pulled ${value.length} characters`);
  }
  return null;
});
