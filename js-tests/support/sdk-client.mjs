// Moved to the package so the shipped demo (odds-gate demo) and the tests share one copy:
// edit pkg-template/demo/sdk-client.js.
export * from '../../pkg-template/demo/sdk-client.js';
