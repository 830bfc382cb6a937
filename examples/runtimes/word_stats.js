// A Tradewind task in Node.js: counts the words of the text its upstream Python task returned.
//
// Its input comes resolved in the handshake (`details.arguments`, from the @task.runtime stub's
// parameters); it also reads a Variable and pushes a second XCom besides its return value.
"use strict";

const { runTask } = require("./tradewind_client");

runTask(async (client, details) => {
  const { text, top } = details.arguments;
  if (typeof text !== "string") throw new TypeError(`expected text, got ${JSON.stringify(text)}`);
  const minLength = Number((await client.getVariable("word_stats_min_length")) ?? 1);
  const counts = new Map();
  for (const word of text.toLowerCase().match(/[\p{L}\p{N}']+/gu) ?? []) {
    if (word.length >= minLength) counts.set(word, (counts.get(word) ?? 0) + 1);
  }
  const ranked = [...counts.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  console.log(`try ${details.try_number} of ${details.task_id}: ${counts.size} distinct words`);
  await client.setXCom("distinct", counts.size);
  return { words: [...counts.values()].reduce((a, b) => a + b, 0), top: ranked.slice(0, top) };
});
