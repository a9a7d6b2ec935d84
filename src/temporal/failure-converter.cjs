// The failure converter of every client, worker and workflow bundle (DataConverter.failureConverterPath,
// bundleWorkflowCode's failureConverterPath): a failure's message and stack trace move into its
// encoded attributes, a payload, so the payload codec seals them as it seals every other value.
// CommonJS because the SDK require()s this path in the worker's and clients' process (also under
// Node 20, which cannot require an ES module), and webpack bundles it into the workflow sandbox as is.
'use strict';
const { DefaultFailureConverter } = require('@temporalio/common');

exports.failureConverter = new DefaultFailureConverter({ encodeCommonAttributes: true });
