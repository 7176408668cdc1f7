// Package question relays the questions upstream servers ask about their
// native MCP tasks (an elicitation/create related to a task): Questions
// keeps one reader (an open tasks/result request) per input_required task
// of this process, holds the question that arrives on it, and delivers
// the user's answer once (Answer). Sessions hand it the elicitations they
// receive (Elicit); the native task driver asks and answers through it.
//
// State lives in process memory and ends with the reader. It imports the
// root domain package and mcp-go only; it must not import mcpclient or its
// other packages.
package question
