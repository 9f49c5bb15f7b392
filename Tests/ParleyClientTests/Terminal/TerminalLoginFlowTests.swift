import Foundation
import ParleyTerminal
import Testing

/// Signing in on the input line: each question accepts what people type (capitals, spaces)
/// and refuses what cannot work without moving on; a password is kept exactly as typed.
@Suite struct TerminalLoginFlowTests {
    /// The first question understands the ways people answer it, and nothing else.
    @Test(arguments: [
        ("l", true, false), ("  L  ", true, false), ("login", true, false), ("Log In", true, false),
        ("r", true, true), ("REGISTER", true, true), (" register ", true, true),
        ("yes", false, false), ("", false, false), ("lo", false, false), ("sign up", false, false),
    ])
    func theFirstQuestionTakesLogInOrRegister(answer: String, accepted: Bool, registering: Bool) {
        var flow = LoginFlow()
        let complete = flow.answer(answer)
        #expect(!complete, "one answer never completes the flow")
        #expect(flow.step == (accepted ? .organization : .choice))
        #expect(flow.registering == registering)
    }

    /// A refused answer keeps the question (and what was given before); answers are trimmed,
    /// except the password, whose spaces are part of it.
    @Test func refusedAnswersKeepTheQuestionAndPasswordsKeepTheirSpaces() {
        var flow = LoginFlow()
        var steps: [LoginFlow.Step] = []
        for answer in ["l", "   ", "  Acme  ", "ada", "ada.acme.io", " ada@acme.io ", ""] {
            let complete = flow.answer(answer)
            #expect(!complete)
            steps.append(flow.step)
        }
        #expect(steps == [.organization, .organization, .email, .email, .email, .password, .password])
        #expect(flow.organization == "Acme" && flow.email == "ada@acme.io")
        let complete = flow.answer("  pass word  ")
        #expect(complete, "a login is complete at the password")
        #expect(flow.password == "  pass word  ")
        #expect(flow.step == .password)
    }

    /// Registering asks two more things; an empty name is refused, an empty invite means none.
    @Test func registeringAsksForANameAndAnOptionalInvite() {
        var flow = LoginFlow()
        let early = ["r", "NewCo", "eve@new.co", "secret123"].map { flow.answer($0) }
        #expect(early == [false, false, false, false] && flow.step == .displayName)
        let blankName = flow.answer("   ")
        #expect(!blankName && flow.step == .displayName)
        let name = flow.answer(" Eve ")
        #expect(!name && flow.step == .invite && flow.displayName == "Eve")
        let noInvite = flow.answer("   ")
        #expect(noInvite && flow.inviteCode == nil)
    }

    /// The prompt shown for each question (the registering password names the length rule).
    @Test func eachQuestionHasItsPrompt() {
        var flow = LoginFlow()
        var prompts = [flow.prompt]
        for answer in ["r", "Acme", "ada@acme.io", "secret123", "Ada"] {
            _ = flow.answer(answer)
            prompts.append(flow.prompt)
        }
        #expect(prompts == [
            "Sign in: (l)og in or (r)egister?", "Organization", "Email", "Password (8+ characters)", "Your name",
            "Invite code (Enter for none)",
        ])
        var login = LoginFlow()
        for answer in ["l", "Acme", "ada@acme.io"] { _ = login.answer(answer) }
        #expect(login.prompt == "Password")
    }
}
