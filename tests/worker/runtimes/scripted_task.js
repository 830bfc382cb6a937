// A runtime task for the tests: runs the steps its `steps` argument lists, in order, through
// the example client (examples/runtimes/tradewind_client.js), and returns `result`.
"use strict";

const path = require("path");
const { runTask } = require(path.join(__dirname, "../../../examples/runtimes/tradewind_client"));

const STEPS = {
  async pull(client, step) {
    const value = await client.getXCom(step.task, step.key ?? "return_value");
    console.log(`pulled ${step.task}: ${JSON.stringify(value).length} characters`);
  },
  async push(client, step) {
    await client.setXCom(step.key, "z".repeat(step.bytes));
  },
  async fail_on_try(client, step, details) {
    if (details.try_number === step.try) throw new Error(`try ${step.try} fails on purpose`);
  },
  async connection(client, step) {
    const connection = await client.getConnection(step.conn_id);
    console.log(`connection ${connection.conn_id} has password ${connection.password}`);
  },
  async variable(client, step) {
    console.log(`variable ${step.key} is ${await client.getVariable(step.key)}`);
  },
  async mask(client, step) {
    await client.maskSecret(step.value);
    console.log(`the token is ${step.value}`);
  },
  async arguments(client, step, details) {
    console.log(`arguments: ${JSON.stringify(details.arguments.upstream).length} characters`);
  },
};

runTask(async (client, details) => {
  for (const step of details.arguments.steps ?? []) {
    await STEPS[step.do](client, step, details);
  }
  return details.arguments.result ?? null;
});
