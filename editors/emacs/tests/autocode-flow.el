;;; autocode-flow.el --- a person's whole task in Emacs + eglot, from menus only  -*- lexical-binding: t -*-

;; Run by tests/editors/test_emacs_eglot.py with `emacs --batch`.  The "person"
;; never types JSON or an id: every step is an entry picked from eglot's code
;; action menu or from the server's prompt, or text typed into a file the server
;; named and then saved.  Menu picks go through `completing-read', which this
;; script answers with the entry matching `autocode-flow-pick' (a regexp).
;;
;; Environment: AUTOCODE_REPO (the repository), AUTOCODE_CONTACT (the server
;; command or "HOST:PORT" as JSON), AUTOCODE_INIT (initializationOptions as JSON,
;; optional), AUTOCODE_BRIEF, AUTOCODE_ANSWER, AUTOCODE_CLIENT_REPO (the path the
;; editor sees, when the server sees another one through --path-map).

(require 'cl-lib)
(require 'json)
(require 'eglot)

(defvar autocode-flow-pick nil "Regexp: which entry the person picks in the next menu.")
(defvar autocode-flow-messages nil "Every message shown, newest first.")
(defvar autocode-flow-picked nil "Every menu entry picked, in order.")

(defun autocode-flow-log (fmt &rest args)
  (princ (concat (apply #'format fmt args) "\n") #'external-debugging-output))

(defun autocode-flow--pick (prompt collection &rest _)
  (let* ((items (cond ((functionp collection) (all-completions "" collection))
                      (t (mapcar (lambda (x) (if (consp x) (car x) x)) collection))))
         (found (and autocode-flow-pick
                     (cl-find-if (lambda (s) (string-match-p autocode-flow-pick s)) items))))
    (unless found
      (error "menu %S has no entry matching %S: %S" prompt autocode-flow-pick items))
    (autocode-flow-log "picked: %s" found)
    (push found autocode-flow-picked)
    found))

(advice-add 'completing-read :override #'autocode-flow--pick)
;; eglot asks before a server edits files (workspace/applyEdit); the person says yes.
(advice-add 'y-or-n-p :override
            (lambda (prompt) (autocode-flow-log "confirmed: %s" prompt) t))
(advice-add 'message :before
            (lambda (fmt &rest args)
              (when (stringp fmt)
                (let ((text (apply #'format-message fmt args)))
                  (push text autocode-flow-messages)
                  (autocode-flow-log "message: %s" text)))))

(defun autocode-flow-wait (pred what &optional seconds)
  (let ((deadline (+ (float-time) (or seconds 90))))
    (while (not (funcall pred))
      (when (> (float-time) deadline) (error "timed out waiting for %s" what))
      (accept-process-output nil 0.05))))

(defun autocode-flow-path-in-messages (name)
  "The newest file path ending in NAME that a message told the person to open."
  (cl-loop for m in autocode-flow-messages
           when (string-match (concat "open \\(/[^ \n]*" (regexp-quote name) "\\)") m)
           return (match-string 1 m)))

(defun autocode-flow-wait-for-file-message (name)
  (autocode-flow-wait (lambda () (autocode-flow-path-in-messages name))
                      (format "a message naming %s" name))
  (autocode-flow-path-in-messages name))

(defvar autocode-flow-source-buffer nil)

(defun autocode-flow-action-titles ()
  (with-current-buffer autocode-flow-source-buffer
    (mapcar (lambda (a) (plist-get a :title)) (eglot-code-actions (point-min) nil nil nil))))

(defun autocode-flow-choose-action (regexp)
  "Open eglot's code action menu in the source buffer and pick the entry matching REGEXP."
  (autocode-flow-wait (lambda () (cl-some (lambda (title) (string-match-p regexp title))
                                          (autocode-flow-action-titles)))
                      (format "a code action matching %s" regexp))
  (with-current-buffer autocode-flow-source-buffer
    ;; As from the keyboard (M-x eglot-code-actions), so eglot asks with `completing-read'
    ;; rather than a mouse popup menu.
    (let ((autocode-flow-pick regexp)
          (last-nonmenu-event ?\r))
      (eglot-code-actions (point-min) nil nil t))))

(defun autocode-flow-fill (path key text)
  "Open PATH, type TEXT under the field KEY, save."
  (with-current-buffer (find-file-noselect path)
    (revert-buffer t t t)
    (goto-char (point-min))
    (re-search-forward (concat "^<!-- autocode:" (regexp-quote key)))
    (end-of-line)
    (insert "\n" text)
    (save-buffer)
    (autocode-flow-log "saved %s" path)))

(defun autocode-flow-first-field (path)
  (with-temp-buffer
    (insert-file-contents path)
    (goto-char (point-min))
    (re-search-forward "^<!-- autocode:\\([A-Za-z0-9_.-]+\\)")
    (match-string 1)))

(defun autocode-flow-contact (contact init)
  "eglot's contact for CONTACT (from JSON): a command (a vector), or an object with
`tcp' [HOST, PORT] or `socket' PATH; INIT is the initializationOptions plist.  A network
contact is given as eglot's keyword form so the options (the token) travel with it."
  (cond
   ((vectorp contact)
    (append (append contact nil) (and init (list :initializationOptions init))))
   ((assq 'tcp contact)
    (let ((host (aref (cdr (assq 'tcp contact)) 0))
          (port (aref (cdr (assq 'tcp contact)) 1)))
      (list :process (lambda () (open-network-stream "autocode-lsp" nil host port))
            :initializationOptions init)))
   ((assq 'socket contact)
    (let ((path (cdr (assq 'socket contact))))
      (list :process (lambda () (make-network-process :name "autocode-lsp" :family 'local
                                                      :service path :noquery t))
            :initializationOptions init)))
   (t (error "unknown contact %S" contact))))

(defun autocode-flow-run ()
  (let* ((repo (file-name-as-directory (or (getenv "AUTOCODE_CLIENT_REPO") (getenv "AUTOCODE_REPO"))))
         (contact (json-read-from-string (getenv "AUTOCODE_CONTACT")))
         (init (and (getenv "AUTOCODE_INIT") (json-parse-string (getenv "AUTOCODE_INIT") :object-type 'plist)))
         (brief (getenv "AUTOCODE_BRIEF"))
         (answer (getenv "AUTOCODE_ANSWER"))
         (contact (autocode-flow-contact contact init)))
    (setq autocode-flow-source-buffer (find-file-noselect (concat repo "greet.py")))
    (with-current-buffer autocode-flow-source-buffer
      (python-mode)
      (eglot '(python-mode) (project-current nil repo) 'eglot-lsp-server contact "python")
      (autocode-flow-wait (lambda () (eglot-current-server)) "eglot to connect"))

    ;; 1. Start a task from the menu; write the brief into the form the server names.
    (autocode-flow-choose-action "start a task")
    (autocode-flow-fill (autocode-flow-wait-for-file-message "new-task.md") "brief" brief)

    ;; 2. The question arrives as a prompt; the person chooses to answer in a file.
    (setq autocode-flow-pick "Answer in a file")
    (let ((answers (autocode-flow-wait-for-file-message "answers.md")))
      (autocode-flow-fill answers (autocode-flow-first-field answers) answer))

    ;; 3. Review and approve the plan from the menu.
    (autocode-flow-choose-action "review plan")
    (autocode-flow-wait-for-file-message "plan.md")
    (autocode-flow-choose-action "approve plan r1")

    ;; 4. Review the change as a file, then apply it.
    (autocode-flow-choose-action "review the changes")
    (autocode-flow-wait-for-file-message "changes.diff")
    (autocode-flow-choose-action "apply the changes")
    ;; The change arrives in the open buffer (with undo); the server never writes the file
    ;; behind it (eglot does not save for it), so the person saves it and the task completes
    ;; once the server reads the change back from disk.
    (with-current-buffer autocode-flow-source-buffer
      (autocode-flow-wait (lambda () (save-excursion (goto-char (point-min)) (search-forward "goodbye" nil t)))
                          "the change in the greet.py buffer")
      (save-buffer))
    (autocode-flow-wait (lambda () (cl-some (lambda (m) (string-match-p "AutoCode task [^ ]+ completed" m))
                                            autocode-flow-messages))
                        "the task to complete after the save")

    ;; 5. The doctor report opens as a file too.
    (autocode-flow-choose-action "AutoCode: doctor")
    (autocode-flow-wait-for-file-message "doctor.md")
    (autocode-flow-log "picked in order: %S" (reverse autocode-flow-picked))
    (autocode-flow-log "AUTOCODE-FLOW-OK")))

(condition-case err
    (progn (autocode-flow-run) (kill-emacs 0))
  (error (autocode-flow-log "AUTOCODE-FLOW-FAILED: %S" err) (kill-emacs 1)))
