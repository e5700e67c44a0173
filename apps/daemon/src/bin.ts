#!/usr/bin/env node
console.log('agent: not wired yet');
