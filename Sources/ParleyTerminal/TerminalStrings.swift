import Foundation
import ParleyClient

/// The terminal client's own texts (pane titles, key hints, the help, the statuses after
/// commands, the sign-in form) in the language the SDK's shared texts follow,
/// `ParleyStrings.locale`: English as the code writes it, or French from ``french``.
///
/// A text is looked up by its English template, gettext style, and its `{name}` placeholders
/// are filled in one pass (`ParleyStrings.fill`): what a person typed (a message, a name, a
/// search, a path) is always a value, never part of a template, so it is never translated and a
/// name that reads "{name}" stays as typed. A template without a French entry stays English.
enum TerminalStrings {
    /// `english` in the language of `ParleyStrings.locale` (French when it is French and the
    /// table has the template, else `english` itself), its placeholders filled with `values`.
    static func text(_ english: String, _ values: [String: String] = [:]) -> String {
        ParleyStrings.fill(template(english, locale: ParleyStrings.locale), values)
    }

    /// The template for `english` in `locale`'s language, placeholders still in it.
    static func template(_ english: String, locale: Locale) -> String {
        guard locale.language.languageCode?.identifier == "fr" else { return english }
        return french[english] ?? english
    }

    /// French templates by their English ones. Each keeps its English key's placeholders; the
    /// key hints are no wider than the English ones (the status line is cut at the terminal's
    /// width); commands, their syntax ("/dm EMAIL") and key names (Enter, Tab, Esc, PgUp,
    /// Ctrl-C) stay as they are. The tests check the placeholders, the widths, and that every
    /// template the sources use is here.
    static let french: [String: String] = [
        // ChatCommand.swift: /help
        "a direct conversation": "une conversation directe",
        "a group with these people": "un groupe avec ces personnes",
        "open a conversation (number or title)": "ouvrir une conversation (numéro ou titre)",
        "rename the open group, add people to it": "renommer le groupe ouvert, y ajouter des personnes",
        "take someone out of the open group, leave it": "retirer quelqu’un du groupe ouvert, le quitter",
        "reply to message N (1 = newest)": "répondre au message N (1 = le plus récent)",
        "edit your message N": "modifier votre message N",
        "delete your message N for everyone": "supprimer votre message N pour tous",
        "react; /unreact [N] EMOJI takes it back": "réagir ; /unreact [N] EMOJI annule la réaction",
        "forward message N": "transférer le message N",
        "search this conversation": "chercher dans cette conversation",
        "send a file (an image shows as one)": "envoyer un fichier (une image s’affiche comme telle)",
        "save message N's attachment to a file": "enregistrer la pièce jointe du message N dans un fichier",
        "open message N's thread (Esc or /close leaves it)": "ouvrir le fil du message N (Esc ou /close pour en sortir)",
        "pin message N for everyone, unpin it, list pins": "épingler le message N pour tous, le désépingler, lister les épinglés",
        "no notifications here except mentions (or again)": "plus de notifications ici, sauf les mentions (ou toutes à nouveau)",
        "no direct messages, typing or alerts from someone": "ni messages directs, ni indicateur de saisie, ni alertes de quelqu’un",
        "report message N to the admins": "signaler le message N aux administrateurs",
        "report a person to the admins": "signaler une personne aux administrateurs",
        "change your display name": "changer votre nom affiché",
        "your picture (PNG, JPEG, GIF, WebP), or none": "votre photo (PNG, JPEG, GIF, WebP), ou aucune",
        "@NAME then Tab": "@NAME puis Tab",
        "complete a name: the person is mentioned": "compléter un nom : la personne est mentionnée",
        "load older messages (or PgUp)": "charger des messages plus anciens (ou PgUp)",
        "send failed messages again": "renvoyer les messages en échec",
        "reconnect now": "se reconnecter maintenant",
        "(Ctrl-C quits too)": "(Ctrl-C quitte aussi)",
        "Keys: Tab list/input · ↑ on an empty line picks a message · Esc back":
            "Touches : Tab liste/saisie · ↑ sur une ligne vide choisit un message · Esc retour",
        // ChatCommand.swift: refusals
        "/open needs a number or part of a title": "/open attend un numéro ou une partie d’un titre",
        "/rename needs the group's new name": "/rename attend le nouveau nom du groupe",
        "/leave takes nothing: it leaves the open group": "/leave s’utilise seul : il quitte le groupe ouvert",
        "/search needs some text": "/search attend un texte",
        "/mute, or /mute off": "/mute, ou /mute off",
        "/name needs your new display name": "/name attend votre nouveau nom affiché",
        "/picture PATH, or /picture off": "/picture PATH, ou /picture off",
        "Unknown command /{name}: /help lists them": "Commande inconnue /{name} : /help les liste toutes",
        "{usage}: N is a message number, 1 = the newest": "{usage} : N est un numéro de message, 1 = le plus récent",
        "{command} needs an email or a name": "{command} attend un e-mail ou un nom",
        // ChatScreen: panes and hints
        "online": "en ligne",
        "Conversations": "Conversations",
        "none yet: /dm EMAIL": "aucune : /dm EMAIL",
        "or /group EMAIL,EMAIL… NAME": "ou /group EMAIL,EMAIL… NAME",
        "Pick a conversation (↑ ↓ Enter), or start one:": "Ouvrez (↑ ↓ Enter) ou créez une conversation :",
        "/help for everything": "/help pour tout voir",
        "edited": "modifié",
        "↑↓ choose · Enter open · Tab type · /help · Ctrl-C quit": "↑↓ Enter ouvrir · Tab écrire · /help · Ctrl-C quitter",
        "↑↓ choose · r reply · e edit · d delete · + react · f forward · Esc back":
            "r répondre · e modifier · d suppr. · + émoji · f transférer · Esc retour",
        "Enter send · ↑ on empty line: pick a message · Tab list · PgUp older · /help":
            "Enter envoyer · ↑ ligne vide : messages · Tab liste · PgUp anciens · /help",
        "PgDn: more": "PgDn : suite",
        // TerminalChat+Commands.swift
        "Open a conversation first (↑ ↓ Enter in the list, or /dm EMAIL)":
            "Ouvrez d’abord une conversation (↑ ↓ Enter dans la liste, ou /dm EMAIL)",
        "There is no message {number} (1 is the newest)": "Il n’y a pas de message {number} (1 est le plus récent)",
        "No message to act on": "Aucun message sur lequel agir",
        "Commands (Esc closes)": "Commandes (Esc pour fermer)",
        "Help": "Aide",
        "Reconnecting…": "Reconnexion…",
        "Nothing to resend": "Rien à renvoyer",
        "Sending {count} again": "Renvoi en cours : {count}",
        "No conversation matches \"{text}\"": "Aucune conversation ne correspond à « {text} »",
        "Renamed": "Groupe renommé",
        "Added 1 person": "1 personne ajoutée",
        "Added {count} people": "{count} personnes ajoutées",
        "Removed {name}": "{name} ne fait plus partie du groupe",
        "Open the group to leave first": "Ouvrez d’abord le groupe à quitter",
        "You left the group": "Vous avez quitté le groupe",
        "Only your own messages can be edited": "Seuls vos propres messages peuvent être modifiés",
        "Only your own messages can be deleted": "Seuls vos propres messages peuvent être supprimés",
        "Forwarded to {title}": "Transféré vers {title}",
        "Pinned for everyone": "Épinglé pour tous",
        "Unpinned": "Désépinglé",
        "Open a conversation first": "Ouvrez d’abord une conversation",
        "{count} pinned (Esc closes)": "Épinglés : {count} (Esc pour fermer)",
        "You": "Vous",
        "Someone": "Quelqu’un",
        "Blocked {name}: no direct messages, typing or alerts from them":
            "Vous avez bloqué {name} : ni messages directs, ni saisie, ni alertes de sa part",
        "Unblocked {name}": "Vous avez débloqué {name}",
        "Reported to your organization's admins": "Signalé aux administrateurs de votre organisation",
        "Reported {name} to your organization's admins": "Vous avez signalé {name} aux administrateurs de votre organisation",
        "Muted: only mentions notify you here": "Sourdine : seules les mentions vous notifient ici",
        "Unmuted": "Sourdine désactivée",
        "Open a conversation to search it": "Ouvrez une conversation pour y chercher",
        "{count} found for \"{query}\" (Esc closes)": "Résultats pour « {query} » : {count} (Esc pour fermer)",
        "Cannot read {path}": "Impossible de lire {path}",
        "You are now {name} to everyone": "Vous êtes désormais {name} pour tout le monde",
        "Saved to {path}": "Enregistré dans {path}",
        "Open a group first": "Ouvrez d’abord un groupe",
        "Nobody in your organization matches \"{text}\"": "Personne dans votre organisation ne correspond à « {text} »",
        "{count} people match \"{text}\": use the email": "{count} personnes correspondent à « {text} » : utilisez l’e-mail",
        "Your picture is gone; people see your initials": "Votre photo est retirée ; on voit vos initiales",
        "A picture must be a PNG, JPEG, GIF or WebP image": "Une photo doit être une image PNG, JPEG, GIF ou WebP",
        "Your picture is set; everyone in your organization sees it": "Votre photo est en place ; toute votre organisation la voit",
        // TerminalChat+Keys.swift
        "yourself": "vous-même",
        "reply to {name}": "réponse à {name}",
        "edit": "modification",
        // TerminalChat+Login.swift
        "Sign in: (l)og in or (r)egister?": "Connexion : (l) se connecter ou (r) créer un compte ?",
        "Organization": "Organisation",
        "Email": "E-mail",
        "Password (8+ characters)": "Mot de passe (8 caractères min.)",
        "Password": "Mot de passe",
        "Your name": "Votre nom",
        "Invite code (Enter for none)": "Code d’invitation (Enter si aucun)",
        "not signed in · {server}": "non connecté · {server}",
        "Welcome to Parley": "Bienvenue sur Parley",
        "Sign in to {server}": "Connexion à {server}",
        "Answer on the line below and press Enter.": "Répondez sur la ligne ci-dessous, puis appuyez sur Enter.",
        "Registering": "Inscription",
        "Logging in": "Connexion",
        "Organization: {organization}": "Organisation : {organization}",
        "Email: {email}": "E-mail : {email}",
        "Name: {name}": "Nom : {name}",
        "Joining an organization takes an invite from": "Rejoindre une organisation demande une invitation",
        "its admin (`parley invite`); a new one needs none.": "de son administrateur (`parley invite`) ; une nouvelle n’en demande pas.",
        "Registering…": "Inscription…",
        "Logging in…": "Connexion…",
        // TerminalChat+Thread.swift
        "That is a reply in a thread already": "C’est déjà une réponse dans un fil",
        "That message has not reached the server yet": "Ce message n’a pas encore atteint le serveur",
        "thread": "fil",
        "Nobody here is called that": "Personne ici ne porte ce nom",
        "Also: {names}": "Aussi : {names}",
        // TerminalChat.swift
        "Cannot open the local database: {error}": "Impossible d’ouvrir la base de données locale : {error}",
        "The server refused the session: /logout and sign in again": "Le serveur a refusé la session : /logout, puis reconnectez-vous",
        "Thread · {text}": "Fil · {text}",
        "0 replies · Esc goes back": "Aucune réponse · Esc pour revenir",
        "1 reply · Esc goes back": "1 réponse · Esc pour revenir",
        "{count} replies · Esc goes back": "{count} réponses · Esc pour revenir",
    ]
}
