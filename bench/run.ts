// The benchmark suite (data generator, autocannon scenarios, ceiling run) is its own issue.
console.log('No benchmark scenarios yet: see the performance issue.');
