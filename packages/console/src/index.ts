export { createConsole, type ConsoleOptions } from './console.js';
